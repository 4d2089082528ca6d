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
