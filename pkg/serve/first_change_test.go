package serve

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestFirstDecisionIsAChange: the target runs 1 replica and the first
// decision asks for more: queue 100 + 20 = 120, target 24: ceil(120/24) = 5,
// within the HPA's default scale-up limit max(1+4, 2x1) = 5. 1 -> 5 is a
// change up (counted, logged); an unchanged second decision is none.
// "other" runs 1 and is decided 1 (queue 5, target 10): no change.
func TestFirstDecisionIsAChange(t *testing.T) {
	src := &fakeSource{}
	l, m := newTestLoop(t, src, nil)
	var logs bytes.Buffer
	l.log = slog.New(slog.NewTextHandler(&logs, nil))
	src.set("chat", load(1, 100, 20))
	src.set("other", load(1, 5, 0))
	l.Cycle(t.Context())
	if got := desired(t, m, "chat"); got != 5 {
		t.Fatalf("desired %v, want 5", got)
	}
	src.set("chat", load(5, 100, 20)) // the consumer followed: ceil(120/24) = 5 again
	l.Cycle(t.Context())
	for _, c := range []struct {
		target, dir string
		want        float64
	}{{"chat", "up", 1}, {"chat", "down", 0}, {"other", "up", 0}, {"other", "down", 0}} {
		if got := counterValue(t, m, "scale_changes_total", c.target, c.dir); got != c.want {
			t.Errorf("%s %s changes %v, want %v", c.target, c.dir, got, c.want)
		}
	}
	if n := strings.Count(logs.String(), "desired replicas changed"); n != 1 ||
		!strings.Contains(logs.String(), "target=chat from=1 to=5") {
		t.Errorf("want one change logged, chat from=1 to=5; log:\n%s", logs.String())
	}
}
