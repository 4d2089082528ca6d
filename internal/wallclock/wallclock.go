// Package wallclock tells how far the wall clock moved beyond the
// monotonic one between two readings of time.Now, each of which carries
// both: a step of the system clock (NTP, date -s, a VM restored from a
// snapshot) or a suspend of the machine (CLOCK_MONOTONIC stops; the wall
// clock is set on resume). NTP's slewing moves both alike. It also reads a
// time zone's clock across its DST changes (In, Readings, Past): the
// schedule windows (pkg/recommend) read it, and through them profile's
// notes on them (pkg/seasonal).
package wallclock

import "time"

// Jump is how far the wall clock moved beyond the monotonic clock from
// from to to: positive after a forward step or a suspend, negative after a
// step back, 0 when either time has no monotonic reading (a fake clock, a
// time read from a file: both spans are then the wall clock's).
func Jump(from, to time.Time) time.Duration {
	return to.Round(0).Sub(from.Round(0)) - to.Sub(from)
}
