package histogram

// Bucket is one cumulative bucket of a classic histogram: the number of
// observations <= UpperBound (the le label; +Inf for the last bucket).
type Bucket struct {
	UpperBound float64
	Count      float64
}

// SameLayout reports whether a and b have the same upper bounds in the
// same order.
func SameLayout(a, b []Bucket) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].UpperBound != b[i].UpperBound {
			return false
		}
	}
	return true
}

// Increase is the histogram of the observations made between two scrapes
// of one histogram, bucket by bucket with CounterIncrease's reset rule.
// The buckets of one histogram are counters of one process and reset
// together, so a restart (restarted, or any bucket lower than before)
// makes the whole of cur the increase. ok is false when the layouts differ
// without a restart (no increase can be read); reset reports a restart.
func Increase(prev, cur []Bucket, restarted bool) (inc []Bucket, reset, ok bool) {
	reset = restarted
	if !reset {
		if !SameLayout(prev, cur) {
			return nil, false, false
		}
		for i := range cur {
			if _, r := CounterIncrease(prev[i].Count, cur[i].Count, false); r {
				reset = true
			}
		}
	}
	inc = make([]Bucket, len(cur))
	copy(inc, cur)
	if reset {
		return inc, true, true
	}
	for i := range inc {
		inc[i].Count, _ = CounterIncrease(prev[i].Count, cur[i].Count, false)
	}
	return inc, false, true
}

// Add adds b to acc bucket by bucket (acc nil: a copy of b); false, and
// acc unchanged, when the layouts differ.
func Add(acc, b []Bucket) ([]Bucket, bool) {
	if acc == nil {
		return append([]Bucket(nil), b...), true
	}
	if !SameLayout(acc, b) {
		return acc, false
	}
	for i := range acc {
		acc[i].Count += b[i].Count
	}
	return acc, true
}

// Merge is the sum of two classic histograms whose layouts may differ
// (replicas of two server versions during a rollout, engines of one page):
// a bucket at each bound of either, where each histogram counts at a bound
// it lacks its count at its largest bound below (0 below its first). The
// observations a histogram holds between two of its bounds are counted at
// the upper one, as its own buckets count them, so the sum stays
// cumulative (PromQL's sum by (le) counts them as 0 there and its buckets
// go down). With equal layouts it is Add. a and b are sorted by upper
// bound; a nil a gives a copy of b.
func Merge(a, b []Bucket) []Bucket {
	if a == nil {
		return append([]Bucket(nil), b...)
	}
	out := make([]Bucket, 0, max(len(a), len(b)))
	var ca, cb float64 // each histogram's count at the last of its bounds passed
	for i, j := 0, 0; i < len(a) || j < len(b); {
		var ub float64
		switch {
		case j == len(b) || i < len(a) && a[i].UpperBound < b[j].UpperBound:
			ub, ca = a[i].UpperBound, a[i].Count
			i++
		case i == len(a) || b[j].UpperBound < a[i].UpperBound:
			ub, cb = b[j].UpperBound, b[j].Count
			j++
		default: // a bound of both
			ub, ca, cb = a[i].UpperBound, a[i].Count, b[j].Count
			i++
			j++
		}
		out = append(out, Bucket{UpperBound: ub, Count: ca + cb})
	}
	return out
}
