package recommend

import (
	"strings"
	"testing"
)

// Numbers in step texts stay short whatever their magnitude.
func TestNumFormat(t *testing.T) {
	for _, tc := range []struct {
		x    float64
		want string
	}{
		{12, "12"},
		{2.5, "2.5"},
		{0.000015, "0.000015"}, // 'g' gives 1.5e-05; decimals read better
		{1e10, "10000000000"},  // an integer below 1e15 in full
		{1e300, "1e+300"},      // not 301 digits
		{2.5e299, "2.5e+299"},
		{1e-300, "1e-300"}, // not 300 zeros
	} {
		if got := num(tc.x); got != tc.want {
			t.Errorf("num(%g) = %q, want %q", tc.x, got, tc.want)
		}
	}
}

// A queue beyond any cluster: the raw count is capped at max int32 and the
// text says so instead of showing the saturated count as if it were the
// arithmetic; the decision is clamped by max as usual.
func TestHugeQueueCapped(t *testing.T) {
	p := mustValidate(t, queuePolicy(4))
	p.Max = 5
	// queue 1e10 / 4 = 2.5e9 > 2^31−1 = 2147483647: capped; then max 5
	// (1 + 4 pods allowed per 15 s from 1 is also 5, max binds first).
	d := Decide(p, queueObs(1, 1e10), nil, at(1000))
	expect(t, d, 5, ReasonMax)
	if d.Raw[0].Replicas != 2147483647 {
		t.Errorf("raw replicas %d, want 2147483647", d.Raw[0].Replicas)
	}
	if !strings.Contains(d.Steps[0].Text, "= 2500000000, capped at 2147483647") {
		t.Errorf("step %q does not explain the cap", d.Steps[0].Text)
	}
	d = Decide(p, queueObs(1, 1e300), nil, at(1000))
	for _, s := range d.Steps {
		if len(s.Text) > 400 || !strings.Contains(d.Steps[0].Text, "1e+300 / target 4 per replica = 2.5e+299, capped at 2147483647") {
			t.Errorf("step text %d chars: %q", len(s.Text), s.Text)
		}
	}
}
