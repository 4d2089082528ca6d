package histogram

// CounterIncrease is how much a counter grew from prev to cur, by
// Prometheus's rule for rate() and increase(): a value lower than before
// means the counter was reset to 0 and counted up again, so the increase
// is cur (never negative). restarted says the process is known to have
// restarted in between (process_start_time_seconds changed), which resets
// the counter even when it has already climbed past prev. reset reports
// either case.
func CounterIncrease(prev, cur float64, restarted bool) (inc float64, reset bool) {
	if restarted || cur < prev {
		return cur, true
	}
	return cur - prev, false
}
