package replay

import (
	"context"
	"fmt"
	"io"
	"math"
)

// Bound is a certified lower bound beside the hindsight optimum's schedule
// (docs/simulate.md, "The lower bound"): no replica schedule, causal or
// not, that meets every request that can be met costs less than
// ReplicaSeconds, and none misses fewer than Unmeetable requests.
type Bound struct {
	// ReplicaSeconds is the least replica time over [0, the trace's end]
	// of any schedule that meets every meetable request.
	ReplicaSeconds float64
	// Unmeetable counts the requests no schedule meets: rejected (prompt +
	// output over the KV cache) or whose prompt alone prefills in more
	// than the SLO (or after the drain's stop).
	Unmeetable int64

	requests  int64   // every request of the trace (sizes the descent)
	residency float64 // of ReplicaSeconds, what the residency rule adds (tests)
}

// boundCellsMax caps the bound's grid (cells of the time axis); a longer
// trace gets coarser cells (the bound only loosens).
const boundCellsMax = 1 << 22

// lowerBound computes the Bound of e's trace in one streaming pass. The
// relaxation (worked by hand in docs/simulate.md):
//
//   - A request's prefill is one engine phase on one replica, between its
//     arrival a and its deadline D = min(a + SLO - overhead, end + drain);
//     a phase with n tokens (prompt or decode) lasts at least c·n, c =
//     inf PrefillTime(n)/n, and a replica runs one phase at a time. So
//     over any window J, the serving replicas' time is at least c times
//     the prompt tokens of the requests whose [a, D] lies in J, and some
//     instant of J has at least ceil(that / |J|) serving replicas.
//   - A replica that serves at t was asked for at least a cold start
//     before (or was warm at 0), so it is alive over [max(0, t - cold),
//     t]: n_alive(s) >= n_serve(t) for every t in [s, s + cold]. One
//     request alone: a replica is alive over [D - c·p - cold, a + c·p].
//   - Residency: admission takes a batch slot and KV for prompt + output
//     and nothing is preempted, so a request admitted at t in [a, D - c·p]
//     holds both on one replica over [t, t + L] at least, L = c·p +
//     (output-1)·step, step the least decode step (leastStep), and a
//     replica holds at most MaxBatch requests and KVCapacityTokens. Hence
//     (a) over [D - c·p, a + L], held whatever t: at each instant
//     max(ceil(n / MaxBatch), ceil(KV / KV capacity)) replicas serve; (b)
//     requests of L <= Λ arriving in [amin, amax] hold their slot- and
//     KV-time within [amin, amax + SLO + Λ], so some instant there has
//     that time over a replica's slots (KV) and the span serving; (c) a
//     period holds at least min(g(a), g(D - c·p)) of each request's, g(t)
//     = |[t, t + L] ∩ J_k|.
//   - Cost = ∫ n_alive over [0, end] >= the sum over the periods J_k of
//     the largest of ∫_{J_k} M, W_k and the slot- and KV-time of (c)
//     over a replica's slots and KV, M(s) the most replicas the rules
//     above force alive at s, W_k the prefill work that must happen
//     inside J_k.
//
// Queueing, decode work, the step's growth with batch and context,
// integrality between windows and the decision period are relaxed away:
// the bound is loose where those bind.
func lowerBound(ctx context.Context, e env) (Bound, error) {
	cfg, sp := e.cfg, e.sp
	slo := cfg.SLOTTFT - sp.overhead
	cold := sp.cold
	c := prefillPerToken(sp.m)
	step := leastStep(sp)
	rd, err := e.src.Open()
	if err != nil {
		return Bound{}, err
	}
	defer rd.Close()
	// The accounting end: the declared span, else the last arrival (known
	// only after the pass, so the arrays grow).
	end := e.src.Duration
	P := cfg.Period
	var delta float64
	if !(end/P <= MaxPeriods) {
		return Bound{}, fmt.Errorf("%s: second %g is %.3g periods of %g s from the start; a replay covers at most %d periods", e.src.Name, end, end/P, P, MaxPeriods)
	}
	setDelta := func() {
		delta = max(min(slo, P)/4, 1e-3)
		delta = P / math.Ceil(P/delta) // cells tile the periods
		if n := (end + cold) / delta; n > boundCellsMax {
			delta = P / max(math.Floor(P*boundCellsMax/(end+cold)), 1)
		}
	}
	if !(slo > 0) {
		// No first token can come in time: every request misses.
		var b Bound
		for {
			if _, err := rd.Next(); err == io.EOF {
				return b, nil
			} else if err != nil {
				return Bound{}, err
			}
			b.Unmeetable++
		}
	}
	type cell struct {
		work       float64 // c × prompt tokens of the meetable requests arriving in it
		amin, amax float64
		n          int32
	}
	type arrival struct {
		a           float64
		prompt, out int32
	}
	var (
		cells  []cell
		cover  []int32   // difference array: single-request intervals
		resN   []int32   // difference arrays: requests forced resident
		resKV  []int64   // over a cell, and their KV tokens
		fullN  []int32   // difference arrays: requests resident over
		fullKV []int64   // a whole period, and their KV tokens
		slotS  []float64 // slot-seconds and KV token-seconds held
		kvS    []float64 // within a period, beyond the whole ones
		perW   []float64
		rcells []resCell // by arrival cell, as cells
		b      Bound
		last   float64
		pts    []arrival // meetable arrivals (for the end-dependent pass)
		stream = end > 0
	)
	if stream {
		setDelta()
	}
	add := func(q arrival) {
		a, pt, kv := q.a, c*float64(q.prompt), int64(q.prompt)+int64(q.out)
		d := a + slo
		if end > 0 {
			d = min(d, end+cfg.Drain)
		}
		// One request: alive over [D - pt - cold, a + pt]; the cells
		// wholly inside.
		lo := int(math.Ceil(max(d-pt-cold, 0) / delta))
		hi := int(math.Floor((a+pt)/delta)) - 1
		if hi >= lo {
			cover = grow(cover, hi+2)
			cover[lo]++
			cover[hi+1]--
		}
		// Resident (a batch slot, KV for prompt + output) over
		// [D - pt, a + pt + (output-1)·step]; the cells wholly inside, up
		// to the last a forced-alive cell looks at (resCells).
		lo = int(math.Ceil((d - pt) / delta))
		hi = min(int(math.Floor((a+pt+float64(max(q.out, 1)-1)*step)/delta))-1, resCells(end, delta, cold)-1)
		if hi >= lo {
			resN, resKV = grow(resN, hi+2), grow(resKV, hi+2)
			resN[lo]++
			resN[hi+1]--
			resKV[lo] += kv
			resKV[hi+1] -= kv
		}
		u := int(a / delta)
		for len(cells) <= u {
			cells = append(cells, cell{})
		}
		cl := &cells[u]
		if cl.n == 0 {
			cl.amin, cl.amax = a, a
		}
		cl.work += pt
		cl.amin, cl.amax = min(cl.amin, a), max(cl.amax, a)
		cl.n++
		// Residency within the periods: admitted at some t in [a, D - pt],
		// the request holds its slot and KV over [t, t + L] at least,
		// L = pt + (output-1)·step, so over at least min(g(a), g(D - pt))
		// of period J, g(t) = |[t, t + L] ∩ J| (unimodal in t); all of J
		// when J lies in [D - pt, a + L].
		L := pt + float64(max(q.out, 1)-1)*step
		nPer := int(math.Ceil(end / P))
		kLo, kHi := int(a/P), min(int(math.Ceil(min(d-pt+L, end)/P))-1, nPer-1)
		fullLo, fullHi := int(math.Ceil((d-pt)/P)), int(math.Floor((a+L)/P))-1
		if a+L >= end {
			fullHi = nPer - 1
		}
		fullLo, fullHi = max(fullLo, kLo), min(fullHi, kHi)
		part := func(k int) {
			x, y := float64(k)*P, min(float64(k+1)*P, end)
			g := func(t float64) float64 { return max(0, min(t+L, y)-max(t, x)) }
			if ov := min(g(a), g(d-pt)); ov > 0 {
				slotS, kvS = grow(slotS, k+1), grow(kvS, k+1)
				slotS[k] += ov
				kvS[k] += ov * float64(kv)
			}
		}
		if fullLo <= fullHi {
			fullN, fullKV = grow(fullN, fullHi+2), grow(fullKV, fullHi+2)
			fullN[fullLo]++
			fullN[fullHi+1]--
			fullKV[fullLo] += kv
			fullKV[fullHi+1] -= kv
			for k := kLo; k < fullLo; k++ {
				part(k)
			}
			for k := fullHi + 1; k <= kHi; k++ {
				part(k)
			}
		} else {
			for k := kLo; k <= kHi; k++ {
				part(k)
			}
		}
		// Residency in groups: by the least level whose Λ holds L.
		for l := range resLevels {
			if L <= resLevel(delta, l) {
				for len(rcells) <= u {
					rcells = append(rcells, resCell{})
				}
				rcells[u].slot[l] += L
				rcells[u].kv[l] += L * float64(kv)
				break
			}
		}
		// Prefill work that must happen inside its period.
		k := int(a / P)
		if d <= float64(k+1)*P && (end == 0 || d <= end) {
			perW = grow(perW, k+1)
			perW[k] += pt
		}
	}
	for n := 0; ; n++ {
		q, err := rd.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Bound{}, err
		}
		if n&(1<<16-1) == 0 {
			if err := ctx.Err(); err != nil {
				return Bound{}, err
			}
		}
		last = q.Arrival
		b.requests++
		pt := c * float64(q.Prompt)
		if int64(q.Prompt)+int64(q.Output) > sp.kvCap || pt > slo || (end > 0 && q.Arrival+pt > end+cfg.Drain) {
			b.Unmeetable++
			continue
		}
		r := arrival{q.Arrival, q.Prompt, q.Output}
		if stream {
			add(r)
		} else {
			pts = append(pts, r)
		}
	}
	if !stream {
		// No declared span: the end is the last arrival; a request past
		// the drain's stop is unmeetable.
		end = last
		if !(end/P <= MaxPeriods) {
			return Bound{}, fmt.Errorf("%s: second %g is %.3g periods of %g s from the start; a replay covers at most %d periods", e.src.Name, end, end/P, P, MaxPeriods)
		}
		setDelta()
		for _, r := range pts {
			if r.a+c*float64(r.prompt) > end+cfg.Drain {
				b.Unmeetable++
				continue
			}
			add(r)
		}
	}
	ncells := int(math.Floor(end / delta)) // s-cells wholly inside [0, end]
	if ncells <= 0 {
		return b, nil
	}
	m := make([]int32, ncells)
	run := int32(0)
	for j := range ncells {
		if j < len(cover) {
			run += cover[j]
		}
		if run > 0 {
			m[j] = 1
		}
	}
	// Residency: the requests resident over all of cell i need
	// need[i] = max(ceil(count / MaxBatch), ceil(KV / KV capacity))
	// replicas serving there, each alive since a cold start before; at
	// s-cell j that is the most need over cells j .. j + cold/delta.
	mRes := make([]int32, ncells) // by s-cell, as m: what residency forces
	if len(resN) > 0 {
		k := int(cold / delta) // the most with k·delta <= cold
		for k > 0 && float64(k)*delta > cold {
			k--
		}
		for float64(k+1)*delta <= cold {
			k++
		}
		need := make([]int32, min(len(resN), resCells(end, delta, cold)))
		n, kv := int64(0), int64(0)
		for i := range need {
			n += int64(resN[i])
			kv += resKV[i]
			need[i] = int32(max((n+int64(sp.maxBatch)-1)/int64(sp.maxBatch), (kv+sp.kvCap-1)/sp.kvCap))
		}
		// Sliding maximum over [j, j+k]: a deque of indices of
		// decreasing need.
		var dq []int
		next := 0
		for j := range ncells {
			for ; next <= j+k && next < len(need); next++ {
				for len(dq) > 0 && need[dq[len(dq)-1]] <= need[next] {
					dq = dq[:len(dq)-1]
				}
				dq = append(dq, next)
			}
			for len(dq) > 0 && dq[0] < j {
				dq = dq[1:]
			}
			if len(dq) > 0 {
				mRes[j] = need[dq[0]]
			}
		}
	}
	// Groups: the arrivals of cells [U, U+w) (the first and last non-empty)
	// lie in [amin, amax]; their prefills in [amin, amax + slo]; some
	// instant there has ceil(work / (amax + slo - amin)) serving replicas,
	// alive over [amax + slo - cold, amin]. Both ends grow with U, so a
	// monotone deque gives the most forced at each s-cell.
	prevNonEmpty := make([]int32, len(cells))
	pre := make([]float64, len(cells)+1)
	lastNE := int32(-1)
	for i, cl := range cells {
		if cl.n > 0 {
			lastNE = int32(i)
		}
		prevNonEmpty[i] = lastNE
		pre[i+1] = pre[i] + cl.work
	}
	type iv struct {
		lo, hi float64
		v      int32
	}
	// groups puts into dst, at each s-cell, the most replicas forced by a
	// group of arrival cells: forced(U, last, span) serving at some instant of
	// [amin, amax + slo + extra], alive over [amax + slo + extra - cold,
	// amin].
	groups := func(extra float64, forced func(U, last int, span float64) int32, dst []int32) {
		for w := 1; float64(w)*delta < cold-extra; w *= 2 {
			var dq []iv
			U := 0
			for j := range ncells {
				s0, s1 := float64(j)*delta, float64(j+1)*delta
				// Enqueue the groups whose interval starts by s0.
				for U < len(cells) {
					if cells[U].n == 0 {
						U++
						continue
					}
					lastCell := int(prevNonEmpty[min(U+w-1, len(cells)-1)])
					amin, amax := cells[U].amin, cells[lastCell].amax
					lo := amax + slo + extra - cold
					if lo > s0 {
						break
					}
					v := forced(U, lastCell, amax+slo+extra-amin)
					for len(dq) > 0 && dq[len(dq)-1].v <= v {
						dq = dq[:len(dq)-1]
					}
					dq = append(dq, iv{lo, amin, v})
					U++
				}
				for len(dq) > 0 && dq[0].hi < s1 {
					dq = dq[1:]
				}
				if len(dq) > 0 && dq[0].v > dst[j] {
					dst[j] = dq[0].v
				}
			}
		}
	}
	groups(0, func(U, last int, span float64) int32 {
		return int32(math.Ceil((pre[last+1] - pre[U]) / span * (1 - 1e-12)))
	}, m)
	// Residency in groups: the requests of level l or below arriving in
	// the group hold slot- and KV-time S and K within [amin, amax + slo +
	// Λ_l], so some instant there has max(S / MaxBatch, K / KV capacity)
	// / the span replicas serving.
	if len(rcells) > 0 {
		for len(rcells) < len(cells) {
			rcells = append(rcells, resCell{})
		}
		preS, preK := make([]float64, len(cells)+1), make([]float64, len(cells)+1)
		for l := range resLevels {
			for i := range cells {
				var cs, ck float64
				for k := 0; k <= l; k++ {
					cs += rcells[i].slot[k]
					ck += rcells[i].kv[k]
				}
				preS[i+1], preK[i+1] = preS[i]+cs, preK[i]+ck
			}
			groups(resLevel(delta, l), func(U, last int, span float64) int32 {
				x := max((preS[last+1]-preS[U])/float64(sp.maxBatch), (preK[last+1]-preK[U])/float64(sp.kvCap))
				return int32(math.Ceil(x / span * (1 - 1e-9)))
			}, mRes)
		}
	}
	// Periods: the largest of the forced-alive integral, the prefill work
	// and the slot- and KV-time held within the period over a replica's
	// slots and KV.
	per := int(math.Round(P / delta))
	n, kv := int64(0), int64(0)
	for k := 0; k*per < ncells || k < len(perW) || k < len(slotS) || k < len(fullN); k++ {
		in, inRes := 0.0, 0.0
		for j := k * per; j < min((k+1)*per, ncells); j++ {
			in += float64(m[j])
			inRes += float64(max(m[j], mRes[j]))
		}
		in *= delta
		inRes = max(inRes*delta, in)
		if k < len(perW) {
			in = max(in, perW[k])
		}
		var ss, ks float64
		if k < len(fullN) {
			n += int64(fullN[k])
			kv += fullKV[k]
			J := min(float64(k+1)*P, end) - float64(k)*P
			ss, ks = float64(n)*J, float64(kv)*J
		}
		if k < len(slotS) {
			ss += slotS[k]
			ks += kvS[k]
		}
		v := max(in, inRes, ss/float64(sp.maxBatch), ks/float64(sp.kvCap))
		b.ReplicaSeconds += v
		b.residency += v - in
	}
	return b, nil
}

// prefillPerToken is inf over n of PrefillTime(n)/n, the least seconds a
// token (prompt, or decode within a chunked prefill) takes in a prefill
// phase: sampled at powers of two up to 2^40, exact for a prefill time
// linear in the tokens (pkg/replica's), and shaded by one part in a
// million so that an affine time's intercept does not lift it.
func prefillPerToken(m Model) float64 {
	c := math.Inf(1)
	for k := 0; k <= 40; k++ {
		n := 1 << k
		c = min(c, m.PrefillTime(n)/float64(n))
	}
	return c * (1 - 1e-6)
}

// leastStep is the least time a decode step can take in the replay: a step
// of batch b lasts max(alpha[b] + beta·context, StepTime(b, 0)) (speed's
// tables), at least StepTime(b, 0), so the least over b of that; shaded
// by one part in a million as prefillPerToken is.
func leastStep(sp *speed) float64 {
	f := math.Inf(1)
	for b := 1; b <= sp.maxBatch; b++ {
		f = min(f, sp.floor[b])
	}
	return f * (1 - 1e-6)
}

// resCells is how many cells of the grid the residency rule keeps: those a
// cell wholly inside [0, end] looks at, up to a cold start beyond it.
func resCells(end, delta, cold float64) int {
	return int(math.Floor((end+cold)/delta)) + 2
}

// resLevels is how many levels of residency the group rule keeps; level l
// holds the requests resident at least L <= resLevel(delta, l) = delta·4^l
// (and more than the level below).
const resLevels = 4

func resLevel(delta float64, l int) float64 { return delta * float64(int(1)<<(2*l)) }

// resCell is the residency of the arrivals of one cell by level: slot-
// seconds and KV token-seconds.
type resCell struct{ slot, kv [resLevels]float64 }

// grow extends a with zeros to at least n elements (the bound's arrays
// grow with the trace when its span is not declared).
func grow[T int32 | int64 | float64](a []T, n int) []T {
	if len(a) < n {
		a = append(a, make([]T, n-len(a))...)
	}
	return a
}
