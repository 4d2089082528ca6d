package config

import (
	"strings"
	"testing"
)

// TestTimeoutNotBelowInterval: a query timeout at or past the decision
// period never fires (the period cuts the read first), so the config
// loads with a warning at the key the user wrote: prometheus.timeout when
// given, else pollingInterval (against the 10s default). Below the
// period, no warning. The suggestion is two thirds of the period.
func TestTimeoutNotBelowInterval(t *testing.T) {
	const tgt = "targets:\n- {name: a, selector: '{namespace=\"llm\"}', metrics: [{type: queue, target: 4}], maxReplicaCount: 8}\n"
	const emb = "targets:\n- {name: a, scrape: ['http://h:1/m'], metrics: [{type: queue, target: 4}], maxReplicaCount: 8}\n"
	for _, c := range []struct{ doc, want string }{
		{"pollingInterval: 15s\nprometheus: {url: http://p:9090, timeout: 15s}\n" + tgt,
			"w.yaml:2:43: prometheus.timeout: 15s is not below pollingInterval 15s: a read still waiting at the period's end is cut by the period, not by the timeout, and a source that hangs holds the cycle's decisions until then; set it below the interval, e.g. 10s"},
		{"pollingInterval: 5s\nprometheus: {url: http://p:9090}\n" + tgt,
			"w.yaml:1:18: pollingInterval: 5s is not above prometheus.timeout (default 10s)"},
		{"pollingInterval: 1s\nprometheus: {url: http://p:9090, timeout: 2s}\n" + tgt,
			"e.g. 700ms"},
		{"pollingInterval: 15s\nprometheus: {url: http://p:9090, timeout: 14s}\n" + tgt, ""},
		// embedded mode: no Prometheus, the key bounds the scrapes
		{"pollingInterval: 2s\n" + emb,
			"w.yaml:1:18: pollingInterval: 2s is not above prometheus.timeout (default 10s) (in embedded mode the scrape timeout): a read still"},
		{"pollingInterval: 3s\nprometheus: {timeout: 3s}\n" + emb,
			"w.yaml:2:23: prometheus.timeout: 3s (in embedded mode the scrape timeout) is not below pollingInterval 3s"},
		{"prometheus: {url: http://p:9090}\n" + tgt, ""},
	} {
		cfg, err := Parse([]byte(c.doc), "w.yaml")
		if err != nil {
			t.Errorf("refused: %v\n%s", err, c.doc)
			continue
		}
		switch {
		case c.want == "" && len(cfg.Warnings) != 0:
			t.Errorf("warnings %v, want none\n%s", cfg.Warnings, c.doc)
		case c.want != "" && (len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0].Error(), c.want)):
			t.Errorf("warnings %v, want one with %q\n%s", cfg.Warnings, c.want, c.doc)
		}
	}
}

// TestTimeoutSuggestionLoads: the suggested timeout is written as the
// config takes it. For a 5s period it said "e.g. 3.3s" (Go's form), which
// the file refuses ("a duration takes no fractions: write 3s300ms"); the
// suggestion, copied into prometheus.timeout, loads with no warning.
func TestTimeoutSuggestionLoads(t *testing.T) {
	const tgt = "targets:\n- {name: a, selector: '{namespace=\"llm\"}', metrics: [{type: queue, target: 4}], maxReplicaCount: 8}\n"
	cfg, err := Parse([]byte("pollingInterval: 5s\nprometheus: {url: http://p:9090}\n"+tgt), "w.yaml")
	if err != nil || len(cfg.Warnings) != 1 {
		t.Fatalf("err %v, warnings %v; want one warning", err, cfg.Warnings)
	}
	w := cfg.Warnings[0].Error()
	_, sugg, ok := strings.Cut(w, "e.g. ")
	if !ok || sugg != "3s300ms" { // two thirds of 5s, to 100ms
		t.Fatalf("warning %q: suggestion %q, want 3s300ms", w, sugg)
	}
	cfg, err = Parse([]byte("pollingInterval: 5s\nprometheus: {url: http://p:9090, timeout: "+sugg+"}\n"+tgt), "w.yaml")
	if err != nil || len(cfg.Warnings) != 0 {
		t.Errorf("timeout %s as suggested: err %v, warnings %v; want it to load with none", sugg, err, cfg.Warnings)
	}
}
