package wallclock_test

import (
	"testing"
	"time"

	"github.com/infscale/infscale/internal/clocktest"
	"github.com/infscale/infscale/internal/wallclock"
)

// TestJump: a suspend of 10 min between two readings 15 s apart on the
// monotonic clock is a jump of 10 min; a step back of 5 min one of -5 min;
// readings without a monotonic part (Round(0): a fake clock, a file's)
// none.
func TestJump(t *testing.T) {
	t0 := time.Now()
	t1 := t0.Add(15 * time.Second)
	if got := wallclock.Jump(t0, clocktest.WallMoved(t, t1, 10*time.Minute)); got != 10*time.Minute {
		t.Errorf("suspend: %v, want 10m", got)
	}
	if got := wallclock.Jump(t0, clocktest.WallMoved(t, t1, -5*time.Minute)); got != -5*time.Minute {
		t.Errorf("step back: %v, want -5m", got)
	}
	if got := wallclock.Jump(t0, t1); got != 0 {
		t.Errorf("no step: %v, want 0", got)
	}
	if got := wallclock.Jump(t0.Round(0), t1.Round(0).Add(time.Hour)); got != 0 {
		t.Errorf("no monotonic reading: %v, want 0", got)
	}
}
