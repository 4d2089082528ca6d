package config

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// zeroTarget is a target at scale to zero, its zero: block written as z.
func zeroTarget(z string) string {
	return "targets:\n- {name: a, scrape: ['http://h:1/m'], metrics: [{type: queue, target: 2}], minReplicaCount: 0, maxReplicaCount: 3, zero: {" + z + ", held_scrape: 'http://h:2/m'}}\n"
}

// TestKEDASeconds: pollingInterval and cooldownPeriod take KEDA's integer
// seconds beside a duration (docs/config.md); a duration elsewhere still
// names its unit.
func TestKEDASeconds(t *testing.T) {
	for _, c := range []struct {
		in                 string
		interval, cooldown time.Duration
	}{
		{"pollingInterval: 30\n" + zeroTarget("cooldownPeriod: 300"), 30 * time.Second, 300 * time.Second},
		{"pollingInterval: 30s\n" + zeroTarget("cooldownPeriod: 5m"), 30 * time.Second, 5 * time.Minute},
		// KEDA's 0: no cooldown (it was read as the 5m default).
		{zeroTarget("cooldownPeriod: 0"), 15 * time.Second, 0},
		// Left out or null: the defaults.
		{"pollingInterval:\n" + zeroTarget("cooldownPeriod: null"), 15 * time.Second, 300 * time.Second},
	} {
		f, err := Parse([]byte(c.in), "k.yaml")
		if err != nil {
			t.Errorf("%q: %v", c.in, err)
			continue
		}
		if got, cd := f.IntervalDuration(), time.Duration(f.Targets[0].Zero.Cooldown); got != c.interval || cd != c.cooldown {
			t.Errorf("%q: interval %v, cooldown %v; want %v, %v", c.in, got, cd, c.interval, c.cooldown)
		}
	}
}

// TestZeroAndBadSeconds: a zero period or window is refused at its
// position, not replaced by the default; a KEDA integer out of int32's
// range or not in decimal is refused, naming what to write. Columns
// counted by hand: "pollingInterval: " is 17 characters.
func TestZeroAndBadSeconds(t *testing.T) {
	const target = "targets:\n- {name: a, scrape: ['http://h:1/m'], metrics: [{type: queue, target: 2}], maxReplicaCount: 3}\n"
	for _, c := range []struct{ in, want string }{
		{"pollingInterval: 0\n" + target, "k.yaml:1:18: pollingInterval: must be more than 0 (the decision period, 1s to 1h; leave the key out for the default 15s)"},
		{"pollingInterval: 0s\n" + target, "k.yaml:1:18: pollingInterval: must be more than 0"},
		{"pollingInterval: -5\n" + target, "k.yaml:1:18: pollingInterval: -5 seconds is out of range: want 0 to 2147483647"},
		{"pollingInterval: 017\n" + target, "k.yaml:1:18: pollingInterval: 017: write the seconds in decimal digits"},
		{"pollingInterval: 2147483648\n" + target, "k.yaml:1:18: pollingInterval: 2147483648 seconds is out of range"},
		{"pollingInterval: 7200\n" + target, "k.yaml:1:18: pollingInterval: must be 1s to 1h"},
		{"prometheus: {url: 'http://p:9090', timeout: 0}\ntargets:\n- {name: a, selector: '{pod=\"x\"}', metrics: [{type: queue, target: 2}], maxReplicaCount: 3}\n",
			"k.yaml:1:45: prometheus.timeout: must be more than 0 (leave the key out for the default 10s)"},
		// "- {name: a, scrape: ['http://h:1/m'], metrics: [{type: ttft, target: 2, window: " is 80 characters.
		{"targets:\n- {name: a, scrape: ['http://h:1/m'], metrics: [{type: ttft, target: 2, window: 0}], maxReplicaCount: 3}\n",
			"k.yaml:2:81: targets[0].metrics[0].window: must be more than 0 (at least 1m; leave the key out for the default 3m)"},
		{"targets:\n- {name: a, scrape: ['http://h:1/m'], metrics: [{type: ttft, target: 2, window: 60}], maxReplicaCount: 3}\n",
			"k.yaml:2:81: targets[0].metrics[0].window: 60 has no unit: write 60s for seconds"},
	} {
		_, err := Parse([]byte(c.in), "k.yaml")
		var es Errors
		if !errors.As(err, &es) || len(es) != 1 || !strings.HasPrefix(es[0].Error(), c.want) {
			t.Errorf("%q:\ngot  %v\nwant the one problem %s", c.in, err, c.want)
		}
	}
}

// TestErrorsCapped: 900 unknown keys list the first MaxErrors and one
// line for the 880 others; Total counts all 900.
func TestErrorsCapped(t *testing.T) {
	var b strings.Builder
	b.WriteString("targets:\n- name: a\n  scrape: ['http://h:1/m']\n  metrics: [{type: queue, target: 2}]\n  maxReplicaCount: 3\n")
	for i := range 900 {
		fmt.Fprintf(&b, "  k%d: 1\n", i)
	}
	_, err := Parse([]byte(b.String()), "u.yaml")
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("got %v, want Errors", err)
	}
	if MaxErrors != 20 || len(es) != 21 || es.Total() != 900 {
		t.Fatalf("%d listed, total %d; want 20 and one line, total 900", len(es), es.Total())
	}
	if got := es[0].Error(); !strings.HasPrefix(got, "u.yaml:6:3: targets[0].k0: unknown key") {
		t.Errorf("first: %s", got)
	}
	if got := es[20].Error(); got != "u.yaml: and 880 more problems not listed (the first 20 found are above; fix them and run again)" {
		t.Errorf("last: %s", got)
	}
	if n := strings.Count(err.Error(), "\n") + 1; n != 21 {
		t.Errorf("the message has %d lines, want 21", n)
	}
}

// TestDurationFractions: a Prometheus duration takes no fractions, and
// model.ParseDuration said `unknown unit "." in duration "1.5m"`; the
// error now says so and names the same duration in whole units, worked
// out by hand: 1.5m = 90s = 1m30s, 0.5s = 500ms, 2.25h = 2h15m, a bare
// 1.5 (seconds) = 1s500ms. Column 14: "  lookahead: " is 13 characters.
func TestDurationFractions(t *testing.T) {
	const target = "targets:\n- name: a\n  scrape: ['http://h:1/m']\n  metrics: [{type: queue, target: 2}]\n  maxReplicaCount: 3\n  lookahead: "
	for _, c := range []struct{ in, want string }{
		{"1.5m", "k.yaml:6:14: targets[0].lookahead: 1.5m: a duration takes no fractions: write 1m30s"},
		{"0.5s", "k.yaml:6:14: targets[0].lookahead: 0.5s: a duration takes no fractions: write 500ms"},
		{"2.25h", "k.yaml:6:14: targets[0].lookahead: 2.25h: a duration takes no fractions: write 2h15m"},
		{"1.5", "k.yaml:6:14: targets[0].lookahead: 1.5 has no unit and a duration takes no fractions: write 1s500ms for 1.5 seconds"},
		{"0.0001s", "k.yaml:6:14: targets[0].lookahead: 0.0001s: a duration takes no fractions: write it in whole units of a smaller one"},
	} {
		_, err := Parse([]byte(target+c.in+"\n"), "k.yaml")
		var es Errors
		if !errors.As(err, &es) || len(es) != 1 || !strings.HasPrefix(es[0].Error(), c.want) {
			t.Errorf("%q:\ngot  %v\nwant the one problem %s", c.in, err, c.want)
		}
	}
	// pollingInterval: 1.5 is a float, not KEDA's integer seconds: the same words.
	_, err := Parse([]byte("pollingInterval: 1.5\n"+strings.TrimSuffix(target, "  lookahead: ")), "k.yaml")
	if err == nil || !strings.Contains(err.Error(), "k.yaml:1:18: pollingInterval: 1.5 has no unit and a duration takes no fractions: write 1s500ms") {
		t.Errorf("pollingInterval 1.5: %v", err)
	}
}

// TestNullSaysSo: a key written with no value (`target: ~`, or nothing
// after the colon) reads as left out; its problem says so, not only what
// the absent value (0) breaks. Columns counted by hand: "- {name: a,
// scrape: ['http://h:1/m'], metrics: [{type: queue, target: " is 70
// characters, the ~ at 71; "  maxReplicaCount: " is 19, the ~ at 20.
func TestNullSaysSo(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"targets:\n- {name: a, scrape: ['http://h:1/m'], metrics: [{type: queue, target: ~}], maxReplicaCount: 3}\n",
			"n.yaml:2:71: targets[0].metrics[0].target: written with no value (null: `target: ~` or nothing after the colon reads as left out): "},
		{"targets:\n- name: a\n  scrape: ['http://h:1/m']\n  metrics: [{type: queue, target: 2}]\n  maxReplicaCount: ~\n",
			"n.yaml:5:20: targets[0].maxReplicaCount: written with no value (null: `maxReplicaCount: ~` or nothing after the colon reads as left out): required"},
	} {
		_, err := Parse([]byte(c.in), "n.yaml")
		var es Errors
		if !errors.As(err, &es) || len(es) != 1 || !strings.HasPrefix(es[0].Error(), c.want) {
			t.Errorf("%q:\ngot  %v\nwant the one problem %s", c.in, err, c.want)
		}
	}
}
