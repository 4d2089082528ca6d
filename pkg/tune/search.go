package tune

import (
	"cmp"
	"math"
	"slices"
	"strconv"
)

// Choose is tune's robustness rule over evaluated finalists: the row with
// the least in-sample replica time among those within budget (percent)
// in sample, out of sample and on every stressed copy; when none is, the
// row with the lowest worst miss percentage (ties: less replica time).
// ok reports whether the chosen row holds. It sets each row's Holds.
func Choose(rows []Row, budget float64) (best int, ok bool) {
	best = -1
	for i := range rows {
		r := &rows[i]
		r.Holds = r.within(budget)
	}
	cost := func(r Row) float64 {
		if r.InSample != nil {
			return r.InSample.ReplicaMinutes
		}
		return r.Screen.ReplicaMinutes
	}
	for i, r := range rows {
		if r.Holds && (best < 0 || cost(r) < cost(rows[best])) {
			best = i
		}
	}
	if best >= 0 {
		return best, true
	}
	for i, r := range rows {
		if r.InSample == nil {
			continue
		}
		if best < 0 || r.worst() < rows[best].worst() || (r.worst() == rows[best].worst() && cost(r) < cost(rows[best])) {
			best = i
		}
	}
	return best, false
}

// cheapest returns up to n rows within budget on the screen and its
// stressed copies, cheapest on the screen first; when fewer are, the rows
// with the lowest worst miss percentage fill up.
func cheapest(rows []Row, budget float64, n int) []Row {
	s := slices.Clone(rows)
	slices.SortStableFunc(s, func(a, b Row) int {
		wa, wb := a.screenWorst(), b.screenWorst()
		fa, fb := wa <= budget, wb <= budget
		switch {
		case fa && !fb:
			return -1
		case fb && !fa:
			return 1
		case fa:
			return cmp.Compare(a.Screen.ReplicaMinutes, b.Screen.ReplicaMinutes)
		}
		if c := cmp.Compare(wa, wb); c != 0 {
			return c
		}
		return cmp.Compare(a.Screen.ReplicaMinutes, b.Screen.ReplicaMinutes)
	})
	return s[:min(n, len(s))]
}

// neighbours are the fine stage's candidates around c: the targets halfway
// (geometrically) to the neighbouring grid targets, and for each option
// dimension its value a Step either side and the dimension's other coarse
// and Fine values, one dimension at a time.
func neighbours(c Candidate, sp Space, cold float64) []Candidate {
	var out []Candidate
	for _, m := range sp.Metrics {
		if m.Name != c.Metric {
			continue
		}
		i := slices.Index(m.Targets, c.Target)
		mid := func(a, b float64) float64 {
			v := math.Sqrt(a * b)
			switch {
			case m.Integer:
				v = math.Round(v)
			case m.Round > 0:
				// a whole number of steps, printed without binary noise
				v, _ = strconv.ParseFloat(strconv.FormatFloat(math.Round(v/m.Round)*m.Round, 'f', 6, 64), 64)
			}
			return v
		}
		var ts []float64
		switch {
		case i > 0:
			ts = append(ts, mid(m.Targets[i-1], c.Target))
		case i == 0:
			ts = append(ts, mid(c.Target/2, c.Target))
		}
		if i >= 0 && i+1 < len(m.Targets) {
			ts = append(ts, mid(c.Target, m.Targets[i+1]))
		}
		for _, t := range ts {
			if t > 0 && t != c.Target {
				d := c
				d.Target = t
				out = append(out, d)
			}
		}
	}
	for _, d := range sp.Dims {
		v, ok := c.Option(d.Name)
		if !ok {
			continue
		}
		var vs []float64
		if d.Step > 0 {
			step := d.value(d.Step, cold)
			vs = append(vs, v-step, v+step)
		}
		for _, x := range append(slices.Clone(d.Values), d.Fine...) {
			vs = append(vs, d.value(x, cold))
		}
		var tried []float64
		for _, x := range vs {
			if x >= 0 && x != v && !slices.Contains(tried, x) {
				tried = append(tried, x)
				out = append(out, c.with(d.Name, x))
			}
		}
	}
	return out
}

// markFrontier sets Frontier on the rows no other row beats on the screen
// (a worst miss % over the sample and its stressed copies no higher, and
// no more replica time, one of them strictly); of rows with the same
// figures, the first.
func markFrontier(rows []Row) {
	for i := range rows {
		am, ar := rows[i].screenWorst(), rows[i].Screen.ReplicaMinutes
		rows[i].Frontier = true
		for j, o := range rows {
			bm, br := o.screenWorst(), o.Screen.ReplicaMinutes
			same := bm == am && br == ar
			if (same && j < i) || (bm <= am && br <= ar && !same) {
				rows[i].Frontier = false // beaten, or a tie listed already
				break
			}
		}
	}
}
