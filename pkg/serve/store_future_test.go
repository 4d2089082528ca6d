package serve

import (
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/recommend"
)

// TestStoreFutureSavedAt: a state file whose saved_at lies ahead of the
// clock (a clock stepped back, a file from a node whose clock runs ahead)
// was never judged too old: saved_at 2099 would be restored for ever, its
// desired count exported at every restart. Up to MaxClockSkew (5 min)
// ahead it is restored, as clocks a little apart; beyond, it is refused as
// stale with ErrStateTooOld (and ErrStateFromFuture), the error naming the
// file, how far ahead it is and what to do.
func TestStoreFutureSavedAt(t *testing.T) {
	s, err := NewStore(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	s.Now = func() time.Time { return t0 }
	st := recommend.State{LastDesired: 3, LastAt: t0}
	for _, c := range []struct {
		ahead time.Duration
		ok    bool
	}{
		{0, true},
		{5 * time.Minute, true},              // the skew allowed, its edge included
		{5*time.Minute + time.Second, false}, // a second past it
		{75 * 365 * 24 * time.Hour, false},   // 2099
	} {
		if err := s.Save("chat", Persisted{Desired: 3, Current: 3, State: st, SavedAt: t0.Add(c.ahead)}); err != nil {
			t.Fatal(err)
		}
		p, err := s.Load("chat")
		if c.ok {
			if p == nil || err != nil {
				t.Errorf("saved_at %v ahead: %v %v, want it restored (within the 5 min skew)", c.ahead, p, err)
			}
			continue
		}
		if p != nil || !errors.Is(err, ErrStateTooOld) || !errors.Is(err, ErrStateFromFuture) {
			t.Errorf("saved_at %v ahead: %v %v, want ErrStateTooOld and ErrStateFromFuture", c.ahead, p, err)
			continue
		}
		// It says the file is from the future, not "too old" (the text of
		// ErrStateTooOld, which it is to errors.Is only).
		if msg := err.Error(); !strings.Contains(msg, "chat.json: state file saved in the future: its saved_at is") || strings.Contains(msg, "too old") || !strings.Contains(msg, "ahead of this clock") || !strings.Contains(msg, "check the node's clock") {
			t.Errorf("saved_at %v ahead: %q, want the file, how far ahead and what to do", c.ahead, msg)
		}
	}
	// 5 min 1 s ahead: the message's figure, worked by hand.
	if err := s.Save("chat", Persisted{Desired: 3, Current: 3, State: st, SavedAt: t0.Add(5*time.Minute + time.Second)}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Load("chat"); err == nil || !strings.Contains(err.Error(), "its saved_at is 5m1s ahead of this clock, more than the 5m0s skew allowed") {
		t.Errorf("error %v, want the 5m1s ahead named", err)
	}
	// The loop logs it as a warning (a clock to check), not as the info
	// line of a file merely too old.
	var logs strings.Builder
	l := &Loop{log: slog.New(slog.NewTextHandler(&logs, nil))}
	_, err = s.Load("chat")
	l.fileNotRestored(&target{key: "chat"}, err, false)
	if out := logs.String(); !strings.Contains(out, "level=WARN") || !strings.Contains(out, "state file ignored; starting fresh") || !strings.Contains(out, "chat.json") {
		t.Errorf("log %q, want a WARN line naming the file", out)
	}
}
