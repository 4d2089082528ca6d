package replay

import "math/bits"

// BacklogRequestBytes is what one request in the system costs a replay at
// most, in bytes: a 16-byte entry in a ring buffer that doubles as it
// grows, so up to twice the entries it holds. At MaxBacklog requests:
// 512 MiB.
const BacklogRequestBytes = 32

// AtOnce is how many of n replays a command runs side by side within
// avail bytes (membudget.Budget.Available), each of pools pools (1; 2 for a
// prefill/decode pair, each pool with its own bound), and the backlog
// bound (Config.MaxBacklog) each replay gets:
//
//   - all n with MaxBacklog when n replays at their bound fit;
//   - else as many as fit at MaxBacklog, in turn;
//   - when not even one fits, one at a time, its bound what avail holds
//     (avail / (pools x BacklogRequestBytes)) rounded down to a power of
//     two (a queue's ring buffer grows by doubling from 16: one that
//     fills to the bound ends at it, not at the next power of two), at
//     least MaxBacklog/256 (65,536 requests, 2 MiB: the headroom under the
//     limit takes that).
//
// Which replays run together changes no figure; only a lowered bound does,
// for a policy whose backlog reaches it (Result.ShedWarning names it).
func AtOnce(n, pools int, avail int64) (atOnce int, backlog int64) {
	if n < 1 {
		return 0, MaxBacklog
	}
	one := int64(max(pools, 1)) * BacklogRequestBytes * MaxBacklog // one replay at its bound
	if k := avail / one; k >= 1 {
		return int(min(k, int64(n))), MaxBacklog
	}
	b := avail / (int64(max(pools, 1)) * BacklogRequestBytes)
	if b > 0 {
		b = 1 << (bits.Len64(uint64(b)) - 1)
	}
	return 1, max(b, MaxBacklog/256, 1)
}
