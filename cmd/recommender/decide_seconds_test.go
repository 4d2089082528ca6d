package main

import (
	"strings"
	"testing"
)

// The observed latencies take the form a ttft or queuewait --target takes: a
// number of seconds or a duration with its unit. On 2 replicas with a 2 s TTFT
// target, a 3 s TTFT is a ratio of 1.5: ceil(2 x 1.5) = 3, however 3 s is
// written; a 800 ms queue time on a 400 ms target is a ratio of 2: 4.
func TestDecideCLILatencyFlagsTakeDurations(t *testing.T) {
	for _, ttft := range []string{"3", "3s", "3000ms", "0.05m"} {
		d := decideOK(t, "--metric", "ttft", "--target", "2s", "--ttft", ttft, "--current", "2")
		wantDecision(t, d, 3, "DesiredWithinRange")
		if r := d.Raw["ttft"]; r.Value == nil || *r.Value != 3 || r.Ratio == nil || *r.Ratio != 1.5 {
			t.Errorf("--ttft %s: raw %+v, want value 3 and ratio 1.5", ttft, r)
		}
	}
	for _, qt := range []string{"0.8", "800ms"} {
		d := decideOK(t, "--metric", "queuewait", "--target", "400ms", "--queue-time", qt, "--current", "2")
		wantDecision(t, d, 4, "DesiredWithinRange")
	}
	if code, out, _ := runDecide(t, "--queue", "10", "--itl", "50ms"); code != exitOK || !strings.Contains(out, "observed ITL 0.05 s") {
		t.Errorf("--itl 50ms: exit %d, %q; want the note of ITL 0.05 s", code, out)
	}
	for _, tc := range []struct{ arg, want string }{
		{"--ttft=3x", `--ttft: "3x" is not a time: want seconds as a number or a duration with its unit, e.g. 2.5 or 2500ms`},
		{"--ttft=-2s", "--ttft -2: want a finite number >= 0 (seconds)"},
		{"--queue-time=NaN", "--queue-time NaN: want a finite number >= 0 (seconds)"},
	} {
		code, _, errs := runDecide(t, "--metric", "ttft", "--target", "2s", tc.arg)
		if code != exitInvalid || !strings.Contains(errs, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", tc.arg, code, errs, tc.want)
		}
	}
}

// A target written as a percentage reads as the config's target: key and
// simulate's policy strings read it: 80% is 0.8 for kv, so --kv 0.9 is a
// ratio of 0.9 / 0.8 = 1.125, outside the tolerance, ceil(1.125 × 1) = 2;
// a queue target refuses one.
func TestDecideCLIPercentTarget(t *testing.T) {
	code, out, errs := runDecide(t, "--metric", "kv", "--target", "80%", "--kv", "0.9")
	if code != 0 || !strings.HasPrefix(out, "desired 2 ") {
		t.Errorf("--target 80%% for kv: exit %d, %q, stderr %q; want desired 2", code, out, errs)
	}
	code, _, errs = runDecide(t, "--metric", "queue", "--target", "80%", "--queue", "4")
	if want := `--target (for --metric queue) 80%: queue target is a number (requests per replica), not a percentage`; code != exitInvalid || !strings.Contains(errs, want) {
		t.Errorf("--target 80%% for queue: exit %d, stderr %q; want 2 and %q", code, errs, want)
	}
}
