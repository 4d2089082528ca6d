package recommend

import (
	"testing"
	"time"
)

// BenchmarkDecide is one decision of a queue policy with HPA defaults and a
// lookahead on a state that has run for a while (the replay simulator's
// call, ~40,000 per simulated week per policy).
func BenchmarkDecide(b *testing.B) {
	p := queuePolicy(4)
	p.Max, p.Lookahead = 100, 90*time.Second
	if err := p.Validate(); err != nil {
		b.Fatal(err)
	}
	var st State
	var d Decision
	cur := 5
	for i := range 100 {
		DecideInto(&d, p, queueObs(cur, float64(20+i%7)), &st, at(int64(i*15)))
		cur = d.Desired
	}
	b.ReportAllocs()
	i := 100
	for b.Loop() {
		DecideInto(&d, p, queueObs(cur, float64(20+i%7)), &st, at(int64(i*15)))
		cur = d.Desired
		i++
	}
}

// BenchmarkDecide1000Replicas aggregates 1,000 replicas' samples into an
// Observation and decides on it (issue 2: "Decide on a 1,000-replica
// observation").
func BenchmarkDecide1000Replicas(b *testing.B) {
	p := &Policy{Metrics: []Metric{{Signal: SignalQueue, Target: 4}, {Signal: SignalKV, Target: 0.8}}, Min: 1, Max: 2000}
	if err := p.Validate(); err != nil {
		b.Fatal(err)
	}
	samples := make([]ReplicaSample, 1000)
	for i := range samples {
		samples[i] = ReplicaSample{Running: float64(i % 9), Waiting: float64(i % 3), KV: float64(i%100) / 100, CPU: 40}
	}
	var st State
	var d Decision
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		obs := ObserveReplicas(samples, 1000)
		DecideInto(&d, p, obs, &st, at(int64(i*15)))
		i++
	}
}
