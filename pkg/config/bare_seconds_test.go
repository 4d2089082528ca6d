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
// HPA user may write a utilisation) reads in its signal's unit, as the
// replay's policy strings and decide's --target read it: 80% is 0.8 for
// kv, 12.5% is 0.125 for demand, 80% is 80 for cpu. A count or a time
// refuses one, naming the unit it takes.
func TestPercentTarget(t *testing.T) {
	cfg := func(m string) string {
		return "prometheus: {url: http://p:9090}\ntargets:\n- name: a\n  selector: '{namespace=\"llm\"}'\n  metrics: [" + m + "]\n  maxReplicaCount: 4\n"
	}
	for _, c := range []struct {
		metric string
		want   float64
	}{
		{"{type: kv, target: 80%}", 0.8},
		{"{type: kv, target: '12.5 %'}", 0.125},
		{"{type: cpu, target: 80%}", 80},
	} {
		f, err := Parse([]byte(cfg(c.metric)), "p.yaml")
		if err != nil {
			t.Errorf("%s: %v", c.metric, err)
			continue
		}
		if got := f.Targets[0].policy().Metrics[0].Target; got != c.want {
			t.Errorf("%s: target %v, want %v", c.metric, got, c.want)
		}
	}
	for _, c := range []struct{ metric, want string }{
		{"{type: queue, target: 80%}", `p.yaml:5:35: targets[0].metrics[0].target: queue target is a number (requests per replica), not a percentage`},
		{"{type: ttft, target: 50%}", `ttft target is a number (seconds), not a percentage`},
		{"{type: kv, target: 'x%'}", `"x%" is not a percentage (a finite number before %)`},
	} {
		_, err := Parse([]byte(cfg(c.metric)), "p.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v\nwant %q", c.metric, err, c.want)
		}
	}
}
