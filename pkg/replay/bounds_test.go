package replay

import (
	"context"
	"strings"
	"testing"

	"github.com/infscale/infscale/pkg/trace"
)

// TestReplayBounds: inputs that would make a replay run (or allocate)
// without end are errors before or as they are met, never a hang. A 1 ms
// period would keep 60,000 TTFT slots and tick 1,000 times a simulated
// second; an arrival at 10^300 s is 6.7×10^298 periods of 15 s away
// (MaxPeriods is 2^23 = 8,388,608); a drain of 10^9 s is 6.7×10^7 periods.
func TestReplayBounds(t *testing.T) {
	model := referenceModel(t)
	pol, err := ParsePolicy("queue:24")
	if err != nil {
		t.Fatal(err)
	}
	small := trace.FromSlice("small", 0, []trace.Request{{Arrival: 0, Prompt: 100, Output: 10}})
	far := trace.FromSlice("far", 0, []trace.Request{{Arrival: 0, Prompt: 100, Output: 10}, {Arrival: 1e300, Prompt: 100, Output: 10}})
	long := trace.FromSlice("long", 1e12, []trace.Request{{Arrival: 0, Prompt: 100, Output: 10}})
	for _, c := range []struct {
		name string
		src  trace.Source
		cfg  Config
		want string
	}{
		{"1 ms period", small, Config{Model: model, Period: 0.001}, "period 0.001 s: want a finite period >= 1 s"},
		{"far arrival", far, Config{Model: model}, "far: second 1e+300 is 6.67e+298 periods of 15 s"},
		{"declared span", long, Config{Model: model}, "long: second 1e+12 is 6.67e+10 periods"},
		{"huge drain", small, Config{Model: model, Drain: 1e9}, "drain 1e+09 s: want seconds >= 0, at most 8388608 periods"},
		{"initial", small, Config{Model: model, Initial: MaxReplicas + 1}, "initial replicas 10001: want 0..10000"},
	} {
		_, err := Run(context.Background(), c.src, pol, c.cfg)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v; want one containing %q", c.name, err, c.want)
		}
	}
}

// TestOptimalBounds: optimal plans period by period up to the last arrival,
// so it meets the same bound as every replay (an arrival at 10^15 s is
// 6.7×10^13 periods of 15 s away), as an error, not a hang.
func TestOptimalBounds(t *testing.T) {
	pol, err := ParsePolicy("optimal")
	if err != nil {
		t.Fatal(err)
	}
	far := trace.FromSlice("far", 0, []trace.Request{{Arrival: 0, Prompt: 100, Output: 10}, {Arrival: 1e15, Prompt: 100, Output: 10}})
	long := trace.FromSlice("long", 1e12, []trace.Request{{Arrival: 0, Prompt: 100, Output: 10}})
	for _, c := range []struct {
		src  trace.Source
		want string
	}{
		{far, "far: second 1e+15 is 6.67e+13 periods of 15 s"},
		{long, "long: second 1e+12 is 6.67e+10 periods"},
	} {
		_, err := Run(context.Background(), c.src, pol, Config{Model: referenceModel(t)})
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v; want one containing %q", c.src.Name, err, c.want)
		}
	}
}
