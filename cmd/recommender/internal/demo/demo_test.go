package demo

import (
	"bytes"
	"context"
	"net"
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
	// It ran its whole 12 s of wall time: the summary says so.
	if sum.Span != 12*time.Second || !strings.Contains(out.String(), " decisions in 12s; ") {
		t.Errorf("span %s, want the summary to say 12s:\n%s", sum.Span, out.String())
	}
	// The last line's command runs as written: no `infscale` is on a new
	// user's PATH, so it says how to build one (README's quickstart).
	next := "next: point serve at Prometheus: build the binary (`go build -o bin/infscale ./cmd/recommender`), then `bin/infscale serve --config examples/serve-prometheus.yaml` (docs/serve.md)\n"
	for _, want := range []string{"time  target", "Stabilized", "summary:", next} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	// docs/serve.md shows a 60 s run: the same lines, numbers aside.
	checkDemoTranscript(t, out.String())
}

// TestDemoInterruptedSpan: a demo stopped after 1 s (SIGINT) sums up the
// 1 s it ran, not its 12 s length (it said "in 1m0s" after 5 s).
func TestDemoInterruptedSpan(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Second)
	defer cancel()
	var out bytes.Buffer
	sum, err := RunDemo(ctx, &out, DemoOptions{Duration: 12 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Span != time.Second || !strings.Contains(out.String(), " decisions in 1s (interrupted; the demo runs 12s); ") {
		t.Errorf("span %s, want 1s and the summary to say it was interrupted:\n%s", sum.Span, out.String())
	}
}

// TestDemoPortInUse: with --listen on a port already bound, both demos fail
// before printing anything (the banner and the table's header came first).
func TestDemoPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	o := DemoOptions{Duration: 12 * time.Second, Listen: ln.Addr().String()}
	var out bytes.Buffer
	if _, err := RunDemo(t.Context(), &out, o); err == nil || !strings.Contains(err.Error(), "address already in use") || out.Len() != 0 {
		t.Errorf("demo: err %v, output %q; want the bind error and nothing printed", err, out.String())
	}
	out.Reset()
	if _, err := RunZeroDemo(t.Context(), &out, o); err == nil || !strings.Contains(err.Error(), "address already in use") || out.Len() != 0 {
		t.Errorf("zero demo: err %v, output %q; want the bind error and nothing printed", err, out.String())
	}
}
