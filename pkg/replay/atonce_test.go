package replay

import (
	"context"
	"math"
	"strings"
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
