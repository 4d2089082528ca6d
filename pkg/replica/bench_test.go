package replica

import "testing"

var sink float64

// BenchmarkStepTime is the simulator's hot path: one call per decode step.
func BenchmarkStepTime(b *testing.B) {
	r := reference(b)
	for i := range b.N {
		sink += r.StepTime(1+i&63, int64(i&65535))
	}
}

// BenchmarkStepTimeMoE exercises the expert-fraction table lookup.
func BenchmarkStepTimeMoE(b *testing.B) {
	c := DefaultConfig()
	c.Model, _ = LookupModel("mixtral-8x7b")
	c.TP = 2
	r, err := New(c)
	if err != nil {
		b.Fatal(err)
	}
	for i := range b.N {
		sink += r.StepTime(1+i&63, int64(i&65535))
	}
}

func BenchmarkPrefillTime(b *testing.B) {
	r := reference(b)
	for i := range b.N {
		sink += r.PrefillTime(i & 4095)
	}
}

func BenchmarkCPUPercent(b *testing.B) {
	r := reference(b)
	for i := range b.N {
		sink += r.CPUPercent(i & 63)
	}
}

// BenchmarkNew is the one-off derivation (once per simulation).
func BenchmarkNew(b *testing.B) {
	c := DefaultConfig()
	for range b.N {
		if _, err := New(c); err != nil {
			b.Fatal(err)
		}
	}
}
