package recommend

import (
	"strings"
	"testing"
)

// TestStepSaysItsRounding: a step's "= N" recomputes by hand from the
// numbers printed before it. Where N rounds a quotient up the text says
// ceil(quotient) = N; a whole quotient (or one the float guard forgives)
// is N alone. Worked by hand:
//   - queue 8.5 / 4 = 2.125, ceil 3; ratio 8.5 / (4 × 2) = 1.0625: keep 2
//   - queue 28 / 8 = 3.5, ceil 4 (docs/recommend.md's example pages)
//   - queue 12 / 4 = 3, whole: "= 3"
//   - running 2.1 / 0.7 = 3.0000000000000004 in float64, forgiven: "= 3"
//   - kv 0.9 / 0.8 = ratio 1.125 × 4 reporting = 4.5, ceil 5
//   - ttft 3 / 2 = ratio 1.5 × 3 current = 4.5, ceil 5
//   - held 5 at zero: "max(1, ceil(5 / 4)) = 2" already says its ceil,
//     once, while the queue step says 5 / 4 = 1.25, ceil 2
func TestStepSaysItsRounding(t *testing.T) {
	obs := func(cur int, running, waiting float64) Observation {
		return Observation{Current: cur, Running: running, Waiting: waiting, Held: nan, KV: nan, CPU: nan, TTFT: nan}
	}
	kv := obs(4, 0, 0)
	kv.KV = 0.9
	ttft := obs(3, 0, 0)
	ttft.TTFT = 3
	for _, tc := range []struct {
		name string
		p    *Policy
		o    Observation
		want []string
		not  string
	}{
		{"2.125", queuePolicy(4), obs(2, 0, 8.5), []string{"queue 8.5 / target 4 per replica = ceil(2.125) = 3 (running 0 + waiting 8.5); ratio 8.5 / (4 × 2) = 1.062 within tolerance [0.9, 1.1]: keep 2"}, ""},
		{"3.5", queuePolicy(8), obs(2, 25, 3), []string{"queue 28 / target 8 per replica = ceil(3.5) = 4 (running 25 + waiting 3)"}, ""},
		{"whole", queuePolicy(4), obs(1, 0, 12), []string{"queue 12 / target 4 per replica = 3 (running 0 + waiting 12)"}, "per replica = ceil("},
		{"float guard", &Policy{Metrics: []Metric{{Signal: SignalRunning, Target: 0.7}}, Min: 1, Max: 10}, obs(1, 2.1, 0), []string{"running 2.1 / target 0.7 per replica = 3;"}, "per replica = ceil("},
		{"kv", &Policy{Metrics: []Metric{{Signal: SignalKV, Target: 0.8}}, Min: 1, Max: 10}, kv, []string{"kv mean 0.9 / target 0.8 = ratio 1.125 × 4 reporting = ceil(4.5) = 5"}, ""},
		{"ttft", &Policy{Metrics: []Metric{{Signal: SignalTTFT, Target: 2}}, Min: 1, Max: 10}, ttft, []string{"ttft 3s / target 2s = ratio 1.5 × 3 current = ceil(4.5) = 5"}, ""},
		{"activate", &Policy{Metrics: []Metric{{Signal: SignalQueue, Target: 4}}, Min: 0, Max: 10}, Observation{Held: 5, KV: nan, CPU: nan, TTFT: nan},
			[]string{"queue 5 / target 4 per replica = ceil(1.25) = 2 (at zero replicas: held 5)", "activate: held 5 at zero replicas: max(1, ceil(5 / 4)) = 2"}, "ceil(5 / 4)) = ceil("},
	} {
		d := Decide(mustValidate(t, tc.p), tc.o, nil, at(1000))
		text := stepsText(d)
		for _, w := range tc.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: want a step saying %q\n%s", tc.name, w, text)
			}
		}
		if tc.not != "" && strings.Contains(text, tc.not) {
			t.Errorf("%s: want no %q\n%s", tc.name, tc.not, text)
		}
	}
}

// TestRatioReadsOnItsSideOfTheBand: a ratio printed beside the tolerance
// band reads on the side of each edge (and of 1) that it is on. Worked by
// hand, target 4 on 10 replicas, band [0.9, 1.1]: 35.999 / 40 = 0.899975,
// outside, 4 digits would print 0.9 (an edge, inside): every digit;
// 44.0001 / 40 = 1.1000025, outside: every digit; 44 / 40 = 1.1 and
// 36 / 40 = 0.9, on the edges and inside: 4 digits; 42.5 / 40 = 1.0625,
// 4 digits 1.062, inside as it is. ttft 2.1999 / 2 = 1.09995 reads
// 1.1 in 4 digits, the edge it is below: every digit.
func TestRatioReadsOnItsSideOfTheBand(t *testing.T) {
	for _, tc := range []struct {
		total float64
		want  string
	}{
		{35.999, "ratio 35.999 / (4 × 10) = 0.8999750000000001 outside tolerance [0.9, 1.1]: 9"},
		{44.0001, "ratio 44.0001 / (4 × 10) = 1.1000025 outside tolerance [0.9, 1.1]: 12"},
		{44, "ratio 44 / (4 × 10) = 1.1 within tolerance [0.9, 1.1]: keep 10"},
		{36, "ratio 36 / (4 × 10) = 0.9 within tolerance [0.9, 1.1]: keep 10"},
		{42.5, "ratio 42.5 / (4 × 10) = 1.062 within tolerance [0.9, 1.1]: keep 10"},
	} {
		d := Decide(mustValidate(t, queuePolicy(4)), queueObs(10, tc.total), nil, at(1000))
		if !strings.Contains(stepsText(d), tc.want) {
			t.Errorf("queue %g: want %q\n%s", tc.total, tc.want, stepsText(d))
		}
	}
	o := Observation{Current: 10, Running: nan, Waiting: nan, Held: nan, KV: nan, CPU: nan, TTFT: 2.1999}
	d := Decide(mustValidate(t, &Policy{Metrics: []Metric{{Signal: SignalTTFT, Target: 2}}, Min: 1, Max: 20}), o, nil, at(1000))
	if want := "ttft 2.1999s / target 2s = ratio 1.09995 × 10 current = ceil(10.9995) = 11 within tolerance [0.9, 1.1]: keep 10"; !strings.Contains(stepsText(d), want) {
		t.Errorf("ttft: want %q\n%s", want, stepsText(d))
	}
}
