package main

import (
	"strings"
	"testing"
)

// At --current 0 no server runs: the signal flags a zero-replica decision
// drops (docs/recommend.md, "At zero replicas": running and waiting are 0,
// kv, cpu, ttft and queuewait unknown) are refused, each named, with the
// pointer to --held; before, --queue 10 decided 0 (no-data), exit 0.
func TestDecideRefusesServerSignalsAtZero(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--queue", "10"}, []string{"--queue 10: at --current 0 no server runs, so none reports running or waiting requests", "give --held N instead"}},
		{[]string{"--running", "2", "--waiting", "3"}, []string{"--running 2, --waiting 3: at --current 0"}},
		{[]string{"--kv", "0.5", "--ttft", "2", "--queue-time", "1", "--cpu", "60"}, []string{"--kv 0.5, --cpu 60, --ttft 2, --queue-time 1: at --current 0 no server runs to measure it"}},
		{[]string{"--held", "3", "--waiting", "1"}, []string{"--waiting 1: at --current 0"}},
	} {
		code, out, errs := runDecide(t, append([]string{"--current", "0", "--min", "0"}, tc.args...)...)
		if code != exitInvalid || out != "" {
			t.Errorf("%v: exit %d, stdout %q; want 2 and nothing decided", tc.args, code, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(errs, w) {
				t.Errorf("%v: stderr %q lacks %q", tc.args, errs, w)
			}
		}
	}
	// --held alone, and the demand flags (they count at zero), still decide:
	// held 10, target 4 → max(1, ceil(10/4)) = 3 (activate).
	wantDecision(t, decideOK(t, "--current", "0", "--min", "0", "--held", "10"), 3, "activate")
	// With replicas --queue counts as before: 10 / 4 from 1 → 3.
	wantDecision(t, decideOK(t, "--current", "1", "--queue", "10"), 3, "DesiredWithinRange")
}
