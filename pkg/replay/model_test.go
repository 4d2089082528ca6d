package replay

import (
	"math"
	"testing"
)

// lin is a test model: step = max(0.006 + 1e-7·C, 0.0001·b) + 0.001.
type lin struct{}

func (lin) StepTime(b int, c int64) float64 {
	if b <= 0 {
		return 0
	}
	return math.Max(0.006+1e-7*float64(c), 0.0001*float64(b)) + 0.001
}
func (lin) PrefillTime(t int) float64 { return float64(t) / 10000 }
func (lin) KVCapacityTokens() int64   { return 100000 }
func (lin) MaxBatch() int             { return 128 }
func (lin) ColdStart() float64        { return 60 }
func (lin) CPUPercent(running int) float64 {
	if running == 0 {
		return 5
	}
	return 30 + float64(running)*0.25
}

func TestCurveMatchesStepSum(t *testing.T) {
	s, err := newSpeed(lin{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		b int
		c int64
	}{{1, 0}, {10, 5000}, {128, 0}, {128, 1000}, {100, 30000}} {
		cv := s.curve(tc.b, tc.c)
		sum := 0.0
		for n := int64(1); n <= 300; n++ {
			// Step n-1 reads context c + b·(n-1).
			sum += lin{}.StepTime(tc.b, tc.c+int64(tc.b)*(n-1))
			if got := cv.time(n); math.Abs(got-sum) > 1e-9 {
				t.Fatalf("b=%d c=%d: time(%d) = %v, sum of steps %v", tc.b, tc.c, n, got, sum)
			}
			if got := cv.stepsBy(sum + 1e-9); got != n {
				t.Fatalf("b=%d c=%d: stepsBy(%v) = %d, want %d", tc.b, tc.c, sum, got, n)
			}
			if got := cv.stepsBy(sum - 1e-7); got != n-1 {
				t.Fatalf("b=%d c=%d: stepsBy(just before) = %d, want %d", tc.b, tc.c, got, n-1)
			}
		}
	}
}
