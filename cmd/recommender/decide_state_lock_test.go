package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/statefile"
)

// TestDecideStateTakesTurns: two decides on one --state at once. A reads
// the (missing) state and waits on its page; B starts meanwhile. B waits
// for A's decision and decides from it, and the file ends with both.
//
// A: one page, running 12 + waiting 0, --current 1 (the page), target 4:
// ceil(12 / 4) = 3, within the scale-up limit max(1 + 4, 2 × 1) = 5: 3,
// a scale-up event of +2 at t=1000.
// B: --queue 40 --current 3 at t=1001, target 4, --no-guard (A's 3 have
// just been asked for: the runaway guard would hold them): raw
// ceil(40 / 4) = 10.
// With A's event in the 15 s period the period started at 3 - 2 = 1
// replica: limit max(1 + 4 pods, 1 × 2 percent) = 5, so 5. From the
// state A had not written yet (both reading it at once, as before), the
// period would start at 3: max(3 + 4, 3 × 2) = 7, and A's rename or B's
// would drop the other's decision from the file.
func TestDecideStateTakesTurns(t *testing.T) {
	release := make(chan struct{})
	asked := make(chan struct{})
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(asked) })
		<-release
		fmt.Fprint(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 12\n# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{model_name=\"m\"} 0\n")
	}))
	defer srv.Close()
	var releaseOnce sync.Once
	releaseA := func() { releaseOnce.Do(func() { close(release) }) }
	defer releaseA() // before srv.Close, which waits for A's request
	st := filepath.Join(t.TempDir(), "st.json")
	type result struct {
		code     int
		out, err string
	}
	decide := func(args ...string) <-chan result {
		ch := make(chan result, 1)
		go func() {
			var out, errb bytes.Buffer
			code := run(context.Background(), append([]string{"decide", "--state", st, "--target", "4"}, args...), strings.NewReader(""), &out, &errb)
			ch <- result{code, out.String(), errb.String()}
		}()
		return ch
	}
	a := decide("--now", "1000", srv.URL+"/metrics")
	<-asked // A has read the state and holds it
	b := decide("--now", "1001", "--queue", "40", "--current", "3", "--no-guard")
	select {
	case r := <-b:
		t.Fatalf("B decided while A held the state: exit %d\n%s%s", r.code, r.out, r.err)
	case <-time.After(300 * time.Millisecond):
	}
	releaseA()
	ra, rb := <-a, <-b
	if ra.code != exitOK || !strings.HasPrefix(ra.out, "desired 3 (reason DesiredWithinRange), current 1") {
		t.Errorf("A: exit %d\n%s%s\nwant desired 3 from 1", ra.code, ra.out, ra.err)
	}
	if rb.code != exitOK || !strings.HasPrefix(rb.out, "desired 5 (reason ScaleUpLimit), current 3") {
		t.Errorf("B: exit %d\n%s%s\nwant desired 5 (A's +2 in the period)", rb.code, rb.out, rb.err)
	}
	f, err := statefile.Read(st)
	if err != nil {
		t.Fatal(err)
	}
	var ups []string
	for _, e := range f.State.ScaleUpEvents {
		ups = append(ups, fmt.Sprintf("%d:+%d", e.At.Unix(), e.Change))
	}
	if f.Desired != 5 || strings.Join(ups, " ") != "1000:+2 1001:+2" {
		t.Errorf("state: desired %d, scale-ups %v; want 5 and A's +2 at 1000, B's +2 at 1001", f.Desired, ups)
	}
	if _, err := os.Stat(statefile.LockPath(st)); err != nil {
		t.Errorf("lock file: %v", err)
	}
}

// TestDecideStateLockInterrupted: a decide waiting for another's state
// lock ends on a signal: exit 130, nothing decided.
func TestDecideStateLockInterrupted(t *testing.T) {
	st := filepath.Join(t.TempDir(), "st.json")
	unlock, err := statefile.Lock(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	defer unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	var out, errb bytes.Buffer
	code := run(ctx, []string{"decide", "--state", st, "--queue", "8"}, strings.NewReader(""), &out, &errb)
	if code != exitInterrupted || errb.String() != "infscale: interrupted\n" || out.Len() != 0 {
		t.Errorf("exit %d, stdout %q, stderr %q; want 130", code, out.String(), errb.String())
	}
	if _, err := os.Stat(st); !os.IsNotExist(err) {
		t.Errorf("state written: %v", err)
	}
}
