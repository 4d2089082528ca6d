package timearg

import (
	"strings"
	"testing"
	"time"
)

// TestParse: 2026-01-05 is 20458 days after 1970-01-01, 20458 × 86400 =
// 1767571200; -7d from 2026-01-12 is 2026-01-05; the 9999 bound is unix
// 253402300799 and the 2262 one 9223372036 (MaxInt64 ns).
func TestParse(t *testing.T) {
	now := time.Date(2026, 1, 12, 0, 0, 0, 0, time.UTC)
	day := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		in       string
		relative bool
		b        Bounds
		want     time.Time
	}{
		{"1767571200", false, To9999, day},
		{" 2026-01-05T00:00:00Z ", false, To9999, day},
		{"1767571200.5", false, To9999, day.Add(500 * time.Millisecond)},
		{"2026-01-05T01:00:00+01:00", false, To9999, day},
		{"253402300799", false, To9999, time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)},
		{"now", true, To2262, now},
		{"-7d", true, To2262, day},
		{"-36h", true, To2262, now.Add(-36 * time.Hour)},
		{"+1h", true, To2262, now.Add(time.Hour)},
	} {
		got, err := Parse(c.in, now, c.relative, c.b)
		if err != nil || !got.Equal(c.want) {
			t.Errorf("Parse(%q) = %v, %v; want %v", c.in, got, err, c.want)
		}
	}
	for _, c := range []struct {
		in       string
		relative bool
		b        Bounds
		want     string
	}{
		{"now", false, To9999, "want unix seconds (1700000000) or RFC3339"},
		{"yesterday", true, To2262, "or a relative time (-7d, now)"},
		{"NaN", false, To9999, "want unix seconds"},
		{"-5", false, To9999, "out of range"},
		{"1e20", false, To9999, "253402300799"},
		{"1e12", false, To9999, "years 1970..9999"},
		{"99999999999999999999", false, To9999, "out of range"},
		{"Inf", false, To9999, "out of range"},
		{"0001-01-01T00:00:00Z", false, To9999, "from 1970-01-01T00:00:00Z"},
		{"1e300", true, To2262, "want unix seconds from 0 to 9223372036"},
		{"-1e300d", true, To2262, "at most 100 years"},
	} {
		_, err := Parse(c.in, now, c.relative, c.b)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("Parse(%q): %v, want an error with %q", c.in, err, c.want)
		}
	}
}
