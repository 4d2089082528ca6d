package status

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// plainFile is a Progress on a regular file (a redirected stderr), its
// clock advanced by hand.
func plainFile(t *testing.T, parts int, quiet bool) (*Progress, *os.File, *time.Time) {
	t.Helper()
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	clock := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	p := NewProgress(f, "simulating 2 policies", parts, quiet)
	p.now = func() time.Time { return clock }
	return p, f, &clock
}

func lines(t *testing.T, f *os.File) []string {
	t.Helper()
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// TestProgressPlain: on a file, a plain line each 10 points, or after 10 s
// of less; the least advanced part counts, and a part going back (a search
// starting a new pass) never lowers what was shown.
func TestProgressPlain(t *testing.T) {
	p, f, clock := plainFile(t, 2, false)
	p.Part(0, 0.5) // part 1 at 0: 0%
	p.Part(1, 0.3) // least 30%: 30 >= 0 + 10
	p.Part(1, 0.35)
	*clock = clock.Add(11 * time.Second)
	p.Part(1, 0.36) // 36% after 11 s
	p.Part(1, 0.07) // goes back: the part keeps 36%
	p.Part(0, 0.2)  // the part keeps 50%
	p.Part(1, 1)    // least 50%: 50 >= 36 + 10
	p.Part(0, 1)    // 100%
	p.Done()
	got := strings.Join(lines(t, f), "|")
	want := "simulating 2 policies: 0%|simulating 2 policies: 30%|simulating 2 policies: 36%|simulating 2 policies: 50%|simulating 2 policies: 100%"
	if got != want {
		t.Errorf("lines %q\nwant  %q", got, want)
	}
}

// TestProgressQuiet: quiet writes nothing, on a file as on a buffer.
func TestProgressQuiet(t *testing.T) {
	p, f, _ := plainFile(t, 1, true)
	p.Set(0.5)
	p.Set(1)
	p.Done()
	var b bytes.Buffer
	q := NewProgress(&b, "x", 1, false)
	q.Set(1)
	q.Done()
	if st, _ := f.Stat(); st.Size() != 0 || b.Len() != 0 {
		t.Errorf("quiet wrote %d bytes, a buffer %q; want nothing", st.Size(), b.String())
	}
}

// TestProgressPlainEndsAt100: a redirected stderr's last line is 100% even
// when the work finishes less than PlainStep points and PlainEvery after the
// previous line (a 6 h trace's replay at 95% then done).
func TestProgressPlainEndsAt100(t *testing.T) {
	p, f, _ := plainFile(t, 1, false)
	p.Set(0.95)
	p.Set(1)
	p.Done()
	got := strings.Join(lines(t, f), "|")
	want := "simulating 2 policies: 95%|simulating 2 policies: 100%"
	if got != want {
		t.Errorf("lines %q\nwant  %q", got, want)
	}
}

// TestProgressHeartbeat: a plain progress that does not move (a query a
// hung Prometheus holds) says it is still working every heartbeatEvery,
// and nothing after Done.
func TestProgressHeartbeat(t *testing.T) {
	defer func(d time.Duration) { heartbeatEvery = d }(heartbeatEvery)
	heartbeatEvery = 40 * time.Millisecond
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := NewProgress(f, "backtest", 1, false)
	p.Set(0.3)
	time.Sleep(300 * time.Millisecond)
	p.Done()
	n := len(lines(t, f))
	got := lines(t, f)
	if got[0] != "backtest: 30%" || n < 2 || !strings.HasPrefix(got[1], "backtest: 30% (still working, ") || !strings.HasSuffix(got[1], " at 30%)") {
		t.Fatalf("lines %q: want 30%% then a still-working line", got)
	}
	time.Sleep(150 * time.Millisecond)
	if after := len(lines(t, f)); after != n {
		t.Errorf("%d lines after Done, %d before: want none written after Done", after, n)
	}
}
