package config

import (
	"strings"
	"testing"
)

// TestBareSecondsTarget: a ttft or queuewait target written as a bare
// number reads as seconds; one of a minute or more without a unit is the
// milliseconds slip (load's --goodput reads a bare number as ms, as vLLM
// does): 2000 was 2000 s, a TTFT target nothing ever reaches. It is refused
// at its line, saying what to write; with a unit, any value stands.
func TestBareSecondsTarget(t *testing.T) {
	cfg := func(m string) string {
		return "targets:\n- name: a\n  scrape: ['http://h:1/m']\n  metrics: [" + m + "]\n  maxReplicaCount: 4\n"
	}
	for _, c := range []struct{ metric, want string }{
		{"{type: ttft, target: 2000}", "b.yaml:4:34: targets[0].metrics[0].target: 2000 has no unit and would read as seconds (33m20s): write 2000ms for milliseconds, or 2000s"},
		{"{type: queuewait, target: 400}", "targets[0].metrics[0].target: 400 has no unit and would read as seconds (6m40s): write 400ms"},
		{"{type: ttft, target: 60}", "60 has no unit and would read as seconds (1m)"},
	} {
		_, err := Parse([]byte(cfg(c.metric)), "b.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v\nwant %q", c.metric, err, c.want)
		}
	}
	for _, m := range []string{"{type: ttft, target: 2}", "{type: ttft, target: 59.5}", "{type: ttft, target: 2000ms}", "{type: ttft, target: 120s}", "{type: queuewait, target: 0.4}", "{type: queue, target: 2000}"} {
		if _, err := Parse([]byte(cfg(m)), "b.yaml"); err != nil {
			t.Errorf("%s: %v, want valid", m, err)
		}
	}
}

// TestBareDurationOffersMilliseconds: a duration key given a number alone
// ("timeout: 10000", milliseconds meant) suggested only "write 10000s for
// seconds" (2h46m40s, which then loads); it offers milliseconds too, as
// the command line's duration flags do.
func TestBareDurationOffersMilliseconds(t *testing.T) {
	doc := "prometheus: {url: http://p:9090, timeout: 10000}\ntargets:\n- {name: a, selector: '{namespace=\"llm\"}', metrics: [{type: queue, target: 4}], maxReplicaCount: 8}\n"
	_, err := Parse([]byte(doc), "d.yaml")
	want := "d.yaml:1:43: prometheus.timeout: 10000 has no unit: write 10000s for seconds or 10000ms for milliseconds"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("%v\nwant %q", err, want)
	}
}

// TestPercentTarget: a target written as a percentage ("80%", as a KEDA or
// HPA user may write a utilisation) said only `invalid value "80%"`; the
// unit is the signal's, so it says both readings: 80% is 0.8 as a kv or
// demand fraction, 80 as cpu percent. "12.5%" is 0.125 and 12.5.
func TestPercentTarget(t *testing.T) {
	cfg := func(m string) string {
		return "targets:\n- name: a\n  scrape: ['http://h:1/m']\n  metrics: [" + m + "]\n  maxReplicaCount: 4\n"
	}
	for _, c := range []struct{ metric, want string }{
		{"{type: kv, target: 80%}", `p.yaml:4:32: targets[0].metrics[0].target: "80%" is a percentage: write the number alone, a fraction for kv and demand (0.8), percent for cpu (80)`},
		{"{type: kv, target: '12.5 %'}", `"12.5 %" is a percentage: write the number alone, a fraction for kv and demand (0.125), percent for cpu (12.5)`},
	} {
		_, err := Parse([]byte(cfg(c.metric)), "p.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v\nwant %q", c.metric, err, c.want)
		}
	}
}
