package replay

import (
	"context"
	"math"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/infscale/infscale/pkg/trace"
)

// TestAtOnce: replays at their bound take MaxBacklog x 32 bytes = 512 MiB
// each (1 GiB for a pair's two pools); the values below are that
// arithmetic by hand.
func TestAtOnce(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		n, pools    int
		requests    int64 // the trace's; 0 unknown
		avail       int64
		want        int
		wantBacklog int64
	}{
		{9, 1, 0, math.MaxInt64, 9, 1 << 24}, // no limit: all at once
		{9, 1, 0, 5 << 30, 9, 1 << 24},       // 5 GiB / 512 MiB = 10 >= 9
		{9, 1, 0, 1536 * mib, 3, 1 << 24},    // 1.5 GiB / 512 MiB = 3
		{9, 1, 0, 512 * mib, 1, 1 << 24},     // exactly one
		{9, 2, 0, 1 << 30, 1, 1 << 24},       // one pair: 2 x 512 MiB
		{9, 2, 0, 2047 * mib, 1, 1 << 24},    // 2047 MiB / 1 GiB = 1
		{9, 1, 0, 256 * mib, 1, 1 << 23},     // 256 MiB / 32 B = 2^23
		{9, 1, 0, 300 * mib, 1, 1 << 23},     // 9,830,400 down to a power of two
		{9, 2, 0, 512 * mib, 1, 1 << 23},     // 512 MiB / 64 B
		{9, 1, 0, 1 * mib, 1, 65536},         // 32,768: the floor, MaxBacklog/256
		{9, 1, 0, 0, 1, 65536},               // nothing left: the floor
		{1, 1, 0, math.MaxInt64, 1, 1 << 24},
		// The reference trace's 15,783 requests take at most
		// 15,783 x 32 = 505,056 bytes a replay: 1 MiB holds 2 at once
		// (1,048,576 / 505,056 = 2.08), 9 MiB all 9 (9,437,184 / 505,056
		// = 18.7), a pair 1,010,112 bytes: 1 MiB holds one. The bound
		// stays MaxBacklog: no replay of it can reach 15,783.
		{9, 1, 15783, 1 * mib, 2, 1 << 24},
		{9, 1, 15783, 9 * mib, 9, 1 << 24},
		{9, 2, 15783, 1 * mib, 1, 1 << 24},
		{9, 1, 1 << 30, 1536 * mib, 3, 1 << 24}, // more than MaxBacklog: as unknown
		// 100,000 requests (3,200,000 bytes) in 1 MiB: not one fits; the
		// floor 65,536 is below 100,000, so the bound is lowered to it.
		{9, 1, 100_000, 1 * mib, 1, 65536},
		// 50,000 requests (1,600,000 bytes) in 1 MiB: not one fits, but
		// the floor 65,536 exceeds 50,000: the bound is never reached.
		{9, 1, 50_000, 1 * mib, 1, 1 << 24},
	} {
		got, backlog := AtOnce(c.n, c.pools, c.requests, c.avail)
		if got != c.want || backlog != c.wantBacklog {
			t.Errorf("AtOnce(%d, %d, %d, %d) = %d, %d; want %d, %d", c.n, c.pools, c.requests, c.avail, got, backlog, c.want, c.wantBacklog)
		}
	}
}

// TestConfigMaxBacklog: a replay sheds past its own Config.MaxBacklog and
// says that bound. 40 requests a second of 2000+400 tokens against one
// replica (it serves about 10 a second) pile up 30 a second: 50 are in the
// system within seconds.
func TestConfigMaxBacklog(t *testing.T) {
	src, err := trace.ParseContext(context.Background(), "synthetic:poisson,rate=40,duration=10m,prompt=2000,output=400,seed=1", trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := ParsePolicy("fixed:1")
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Model: referenceModel(t), MaxBacklog: 50}
	r, err := Run(context.Background(), src, pol, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if r.Backlog != 50 || r.Shed == 0 || !strings.Contains(r.ShedWarning(), "fixed:1: 50 requests were in the system") {
		t.Errorf("backlog %d, shed %d, warning %q; want 50, some shed, the warning naming 50", r.Backlog, r.Shed, r.ShedWarning())
	}
	cfg.MaxBacklog = 0
	if r, err = Run(context.Background(), src, pol, cfg); err != nil || r.Backlog != MaxBacklog {
		t.Errorf("default: backlog %d, err %v; want MaxBacklog %d", r.Backlog, err, MaxBacklog)
	}
}

// TestRunAllSize: RunAll ran every policy at once at MaxBacklog whatever
// the memory (backtest and profile: up to 512 MiB a policy, checked
// against nothing). With Config.Size it asks once, for its 3 policies of
// one pool and the trace's count (a 10-minute trace at 4 req/s: the
// requests a pass of the test's own finds), and replays with the bound
// it gives, 7 here, no more passes open at once than it says (1).
func TestRunAllSize(t *testing.T) {
	base := trace.Synthetic{Rate: 4, Duration: 600, Prompt: trace.Tokens{Lo: 100, Hi: 100}, Output: trace.Tokens{Lo: 50, Hi: 50}, Seed: 1}.Source()
	var want int64
	rd, _ := base.Open()
	for _, err := rd.Next(); err == nil; _, err = rd.Next() {
		want++
	}
	if want < 2000 || want > 2800 { // 2,400 expected
		t.Fatalf("the trace has %d requests, want about 2,400", want)
	}
	var mu sync.Mutex
	var open, most int
	src := trace.NewSource(base.Name, base.Duration, func() (trace.Reader, error) {
		r, err := base.Open()
		mu.Lock()
		defer mu.Unlock()
		open++
		most = max(most, open)
		return closeHook{r, func() { mu.Lock(); open--; mu.Unlock() }}, err
	})
	calls := 0
	cfg := Config{Model: referenceModel(t), Size: func(n, pools int, search bool, requests func() int64) Sizing {
		calls++
		if n != 3 || pools != 1 || search {
			t.Errorf("Size(%d, %d, %v): want 3 replays of 1 pool, none searching", n, pools, search)
		}
		if got := requests(); got != want {
			t.Errorf("requests() = %d, want %d", got, want)
		}
		return Sizing{AtOnce: 1, Backlog: 7}
	}}
	pols := make([]Policy, 3)
	for i, s := range []string{"fixed:1", "fixed:2", "fixed:3"} {
		var err error
		if pols[i], err = ParsePolicy(s); err != nil {
			t.Fatal(err)
		}
	}
	res, err := RunAll(context.Background(), src, pols, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Errorf("Size called %d times, want once", calls)
	}
	if most != 1 {
		t.Errorf("%d passes open at once, want Size's 1", most)
	}
	for _, r := range res {
		if r.Backlog != 7 {
			t.Errorf("%s: backlog bound %d, want Size's 7", r.Policy, r.Backlog)
		}
	}
}

// closeHook is a reader that calls done when closed.
type closeHook struct {
	trace.Reader
	done func()
}

func (c closeHook) Close() error { c.done(); return c.Reader.Close() }

// TestSearchAtOnceSameResult: optimal's seeds are each judged against
// the schedule to beat alone, so running them one at a time (what a tight
// memory budget asks, Config.SearchAtOnce 1) finds the same schedule and
// the same result as side by side.
func TestSearchAtOnceSameResult(t *testing.T) {
	src := trace.Synthetic{Rate: 20, Duration: 900, Prompt: trace.Tokens{Lo: 200, Hi: 400}, Output: trace.Tokens{Lo: 100, Hi: 300}, Seed: 3}.Source()
	pol, err := ParsePolicy("optimal")
	if err != nil {
		t.Fatal(err)
	}
	var res [2]Result
	for i, n := range []int{0, 1} {
		if res[i], err = Run(context.Background(), src, pol, Config{Model: referenceModel(t), SearchAtOnce: n}); err != nil {
			t.Fatal(err)
		}
	}
	if !reflect.DeepEqual(res[0], res[1]) {
		t.Errorf("SearchAtOnce 1: %+v\nwant as with the cores: %+v", res[1], res[0])
	}
}
