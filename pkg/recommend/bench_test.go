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
		decideInto(&d, p, queueObs(cur, float64(20+i%7)), &st, at(int64(i*15)), false)
		cur = d.Desired
	}
	b.ReportAllocs()
	i := 100
	for b.Loop() {
		decideInto(&d, p, queueObs(cur, float64(20+i%7)), &st, at(int64(i*15)), false)
		cur = d.Desired
		i++
	}
}
