package membudget

import (
	"math"
	"runtime/debug"
	"testing"
)

func TestOf(t *testing.T) {
	// 128 MiB limit, 40 MiB used: 128 - 40 - (16 + 12) = 60 MiB.
	if b := Of(128<<20, 40<<20); b.Available != 60<<20 || b.Limit != 128<<20 {
		t.Errorf("Of(128Mi, 40Mi) = %+v, want Available 60Mi", b)
	}
	if b := Of(128<<20, 110<<20); b.Available != 0 {
		t.Errorf("over the limit: Available %d, want 0", b.Available)
	}
	if b := Of(0, 1<<20); b.Available != math.MaxInt64 || b.Limit != 0 {
		t.Errorf("no limit: %+v, want Available MaxInt64", b)
	}
}

func TestNowFollowsGOMEMLIMIT(t *testing.T) {
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	if b := Now(); b.Available != math.MaxInt64 {
		t.Fatalf("without a limit: %+v", b)
	}
	debug.SetMemoryLimit(1 << 30)
	b := Now()
	if b.Limit != 1<<30 || b.Used <= 0 || b.Used > 512<<20 || b.Available != 1<<30-b.Used-(1<<27+12<<20) {
		t.Fatalf("GOMEMLIMIT 1GiB: %+v", b)
	}
}
