package demo

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestZeroDemo runs the scale-to-zero demo at a third of its length
// (--demo-duration 20s: cold start 2.7 s, interval 0.33 s, cooldown 3.3 s) and checks what
// the README promises: two bursts after silence, none lost, the first
// requests of each waiting one cold start plus the activation path (a
// scrape, a decision, a follow poll and a probe: under 3 s at this scale),
// the later ones served at the replica's speed (the replica is up: a
// 64-token prefill, well under 0.5 s).
func TestZeroDemo(t *testing.T) {
	if testing.Short() {
		t.Skip("runs for about 15 s")
	}
	var out bytes.Buffer
	sum, err := RunZeroDemo(t.Context(), &out, DemoOptions{Duration: 20 * time.Second})
	t.Log(out.String())
	if err != nil {
		t.Fatal(err)
	}
	cs := sum.ColdStart.Seconds()
	if cs < 2.6 || cs > 2.8 {
		t.Errorf("cold start %v, want 8 s x 20/60 = 2.7 s", sum.ColdStart)
	}
	if len(sum.Bursts) != zeroBursts {
		t.Fatalf("%d bursts, want %d", len(sum.Bursts), zeroBursts)
	}
	for i, b := range sum.Bursts {
		if b.Sent != zeroRequests || b.Answered != zeroRequests {
			t.Errorf("burst %d: %d of %d answered, want all %d", i+1, b.Answered, b.Sent, zeroRequests)
		}
		if b.FirstWait < cs || b.FirstWait > cs+3 {
			t.Errorf("burst %d: first wait %.2f s, want the cold start %.1f s plus under 3 s of activation", i+1, b.FirstWait, cs)
		}
		// Back to zero a cooldown after the last activity serve read (the
		// held requests, at most an interval before the burst's end), plus
		// up to an interval and a follow poll: not sooner.
		if i < len(sum.Bursts)-1 && (b.ToZero < sum.Cooldown-sum.Interval || b.ToZero > sum.Cooldown+2*time.Second) {
			t.Errorf("burst %d: back at zero %v after it, want the cooldown %v (less up to an interval, %v) plus under 2 s", i+1, b.ToZero, sum.Cooldown, sum.Interval)
		}
		// From serve's last read of activity, the cooldown itself is the
		// least it can be: idle-to-zero waits the whole cooldown after it,
		// then an interval for the decision and a follow poll at most.
		if i < len(sum.Bursts)-1 && (b.SinceActive < sum.Cooldown || b.SinceActive > sum.Cooldown+sum.Interval+2*time.Second) {
			t.Errorf("burst %d: back at zero %v after serve last read activity, want the cooldown %v plus under an interval (%v) and 2 s", i+1, b.SinceActive, sum.Cooldown, sum.Interval)
		}
		for j, v := range b.TTFT[zeroClients:] {
			if v > 0.5 {
				t.Errorf("burst %d: request %d after the activation waited %.2f s, want < 0.5 s", i+1, zeroClients+j, v)
			}
		}
	}
	for _, want := range []string{"fleet at zero replicas; burst 1", "12 of 12 answered, 0 lost", "cold start", "summary: cold start", "24 requests sent, 24 answered, 0 lost"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	// docs/serve.md shows a 60 s run: the same lines, numbers aside.
	checkZeroTranscript(t, out.String())
}
