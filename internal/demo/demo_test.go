package demo

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestDemo runs the quickstart at a fifth of its length (12 s: cold start
// 1.6 s, interval 0.4 s, scale-down window 2 s) and checks that the user
// sees what the README promises: a scale-up under the ramp, a hold, and a
// scale-down after the load falls, printed as it happens, then a summary.
func TestDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for 12 s")
	}
	var out bytes.Buffer
	sum, err := RunDemo(t.Context(), &out, DemoOptions{Duration: 12 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	// The load goes from 4 to 40 req/s and back; at 40 req/s a replica
	// carries about 40 x 2.2 s = 88 requests, over 20 per replica: > 1.
	if sum.First != 1 || sum.Peak < 3 || sum.Last != 1 || sum.ScaleUps == 0 || sum.ScaleDowns == 0 {
		t.Errorf("summary %+v, want 1 -> peak >= 3 -> 1 with scale-ups and scale-downs\n%s", sum, out.String())
	}
	if sum.Decisions < 20 {
		t.Errorf("%d decisions in 12 s at 0.4 s, want about 30", sum.Decisions)
	}
	for _, want := range []string{"time  target", "stabilized", "summary:", "point serve at Prometheus"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// docs/serve.md shows a 60 s run: the same lines, numbers aside.
	checkDemoTranscript(t, out.String())
}
