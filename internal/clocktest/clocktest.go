// Package clocktest (a test harness) makes, for tests, the times time.Now
// returns after the wall clock moved beyond the monotonic one.
package clocktest

import (
	"testing"
	"time"
	"unsafe"
)

// WallMoved is at with its wall clock moved by d and its monotonic reading
// kept: what time.Now returns after the system clock was stepped by d (an
// NTP step, an operator's date -s) or the machine was suspended for d
// (CLOCK_MONOTONIC stops, the wall clock is set on resume). Go has no API
// for it, so it writes time.Time's fields (wall: hasMonotonic bit, 33 bits
// of seconds since 1885, 30 bits of nanoseconds). at must carry a
// monotonic reading (from time.Now).
func WallMoved(tb testing.TB, at time.Time, d time.Duration) time.Time {
	tb.Helper()
	p := (*struct {
		wall uint64
		ext  int64
		loc  *time.Location
	})(unsafe.Pointer(&at))
	if p.wall&(1<<63) == 0 {
		tb.Fatal("clocktest.WallMoved: no monotonic reading")
	}
	ns := int64(p.wall<<1>>31)*1e9 + int64(p.wall&(1<<30-1)) + int64(d)
	p.wall = 1<<63 | uint64(ns/1e9)<<30 | uint64(ns%1e9)
	return at
}
