package replay

import "math/bits"

// BacklogRequestBytes is what one request in the system costs a replay at
// most, in bytes: a 16-byte entry in a ring buffer that doubles as it
// grows, so up to twice the entries it holds. At MaxBacklog requests:
// 512 MiB.
const BacklogRequestBytes = 32

// Sizing is how a command runs its replays within its memory
// (Config.Size): AtOnce of them at once, each with the backlog bound
// Backlog (Config.MaxBacklog) and optimal's search with SearchAtOnce seeds
// at once (Config.SearchAtOnce; 0: GOMAXPROCS).
type Sizing struct {
	AtOnce       int
	Backlog      int64
	SearchAtOnce int
}

// AtOnce is how many of n replays a command runs side by side within
// avail bytes (membudget.Budget.Available), each of pools pools (1; 2 for a
// prefill/decode pair, each pool with its own bound), and the backlog
// bound (Config.MaxBacklog) each replay gets. A replay holds at most the
// trace's requests, so each needs room for requests of them (the trace's
// count; 0 when unknown: MaxBacklog), at most MaxBacklog:
//
//   - all n with MaxBacklog when n replays of that many fit;
//   - else as many as fit, in turn, with MaxBacklog;
//   - when not even one fits, one at a time, its bound what avail holds
//     (avail / (pools x BacklogRequestBytes)) rounded down to a power of
//     two (a queue's ring buffer grows by doubling from 16: one that
//     fills to the bound ends at it, not at the next power of two), at
//     least MaxBacklog/256 (65,536 requests, 2 MiB: the headroom under the
//     limit takes that); MaxBacklog when that is no fewer than requests
//     (the bound is never reached).
//
// Which replays run together changes no figure; only a lowered bound does,
// for a policy whose backlog reaches it (Result.ShedWarning names it).
func AtOnce(n, pools int, requests, avail int64) (atOnce int, backlog int64) {
	if n < 1 {
		return 0, MaxBacklog
	}
	need := MaxBacklog
	if requests > 0 {
		need = min(requests, MaxBacklog)
	}
	one := int64(max(pools, 1)) * BacklogRequestBytes * need // one replay at its most
	if k := avail / one; k >= 1 {
		return int(min(k, int64(n))), MaxBacklog
	}
	b := avail / (int64(max(pools, 1)) * BacklogRequestBytes)
	if b > 0 {
		b = 1 << (bits.Len64(uint64(b)) - 1)
	}
	if b = max(b, MaxBacklog/256, 1); b >= need {
		return 1, MaxBacklog
	}
	return 1, b
}
