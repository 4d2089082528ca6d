package recommend

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// A brute-force reference for the wall-clock window, independent of
// readings and robfig/cron: a minimal cron matcher lists the firings (wall
// times, minute by minute), a scan of the instants minute by minute says
// when the zone's clock first reads each firing and last reads its end
// (firing+duration of wall clock), and the window is open in between:
// from the first instant the clock reads the firing (the instant it jumps
// past it, in a spring-forward's gap) to the last instant it reads the end
// (the instant it jumps past it, in a gap), so a fall-back's repeated hour
// leaves no hole.

// bruteCron is a 5-field cron as a set of allowed values per field.
type bruteCron struct {
	f                [5]map[int]bool
	domStar, dowStar bool
}

func parseBruteCron(t *testing.T, s string) bruteCron {
	t.Helper()
	switch s {
	case "@daily":
		s = "0 0 * * *"
	case "@hourly":
		s = "0 * * * *"
	case "@weekly":
		s = "0 0 * * 0"
	}
	fs := strings.Fields(s)
	if len(fs) != 5 {
		t.Fatalf("cron %q: want 5 fields", s)
	}
	bounds := [5][2]int{{0, 59}, {0, 23}, {1, 31}, {1, 12}, {0, 6}}
	var c bruteCron
	for i, f := range fs {
		c.f[i] = map[int]bool{}
		for _, part := range strings.Split(f, ",") {
			lo, hi, step := bounds[i][0], bounds[i][1], 1
			r := part
			if a, b, ok := strings.Cut(part, "/"); ok {
				r = a
				step, _ = strconv.Atoi(b)
			}
			if r != "*" {
				a, b, ok := strings.Cut(r, "-")
				lo, _ = strconv.Atoi(a)
				hi = lo
				if ok {
					hi, _ = strconv.Atoi(b)
				}
			}
			for v := lo; v <= hi; v += step {
				c.f[i][v] = true
			}
		}
	}
	c.domStar, c.dowStar = fs[2] == "*", fs[4] == "*"
	return c
}

// fires reports whether the cron fires at the wall time w (UTC-written).
func (c bruteCron) fires(w time.Time) bool {
	if w.Second() != 0 || w.Nanosecond() != 0 || !c.f[0][w.Minute()] || !c.f[1][w.Hour()] || !c.f[3][int(w.Month())] {
		return false
	}
	dom, dow := c.f[2][w.Day()], c.f[4][int(w.Weekday())]
	if c.domStar || c.dowStar {
		return dom && dow
	}
	return dom || dow
}

// bruteMinute is the reference at one minute: whether the window is
// open, and if so the instants its latest firing was first read (fired)
// and its end last read (until), and the next firing's first reading when
// it fires again before that end (else zero).
type bruteMinute struct {
	open               bool
	fired, until, next time.Time
}

// bruteClock is loc's clock read every minute from one instant: the
// instants, their wall readings (UTC-written), and where each reading is
// first and last read.
type bruteClock struct {
	inst, reads     []time.Time
	firstAt, lastAt map[time.Time]int
	jumps           []int // indexes read more than a minute after the one before
}

func newBruteClock(loc *time.Location, from, to time.Time) *bruteClock {
	k := &bruteClock{firstAt: map[time.Time]int{}, lastAt: map[time.Time]int{}}
	for t := from; t.Before(to); t = t.Add(time.Minute) {
		l := t.In(loc)
		r := time.Date(l.Year(), l.Month(), l.Day(), l.Hour(), l.Minute(), 0, 0, time.UTC)
		i := len(k.inst)
		k.inst, k.reads = append(k.inst, t), append(k.reads, r)
		if _, ok := k.firstAt[r]; !ok {
			k.firstAt[r] = i
		}
		k.lastAt[r] = i
		if i > 0 && r.Sub(k.reads[i-1]) > time.Minute {
			k.jumps = append(k.jumps, i)
		}
	}
	return k
}

// bruteOpen lists, for the instants lo, lo+1m, ... before hi (within the
// clock's span, a margin of the duration and a day inside it), the window
// (cron, d of wall clock) by the definition above.
func bruteOpen(k *bruteClock, c bruteCron, d time.Duration, lo, hi time.Time) []bruteMinute {
	inst, reads := k.inst, k.reads
	minR, maxR := reads[0], reads[0]
	for _, r := range reads {
		if r.Before(minR) {
			minR = r
		}
		if r.After(maxR) {
			maxR = r
		}
	}
	// first is the index of the first reading at or past w (the jump past
	// it in a gap); last the index of w's last reading, or the jump past
	// it when the clock never reads it.
	gap := func(w time.Time) int {
		for _, i := range k.jumps {
			if reads[i-1].Before(w) && reads[i].After(w) {
				return i
			}
		}
		return len(inst) // past the scan
	}
	first := func(w time.Time) int {
		if i, ok := k.firstAt[w]; ok {
			return i
		}
		return gap(w)
	}
	last := func(w time.Time) int {
		if i, ok := k.lastAt[w]; ok {
			return i
		}
		return gap(w)
	}
	var fires []time.Time
	for f := minR.Add(-d); !f.After(maxR.Add(d)); f = f.Add(time.Minute) {
		if c.fires(f) {
			fires = append(fires, f)
		}
	}
	at := func(i int) time.Time {
		if i < len(inst) {
			return inst[i]
		}
		return time.Time{}
	}
	out := make([]bruteMinute, len(inst))
	for k, f := range fires {
		if f.After(maxR) {
			break
		}
		e := f.Add(d)
		start, end := first(f), last(e)
		m := bruteMinute{open: true, fired: at(start), until: at(end)}
		if k+1 < len(fires) && fires[k+1].Before(e) {
			m.next = at(first(fires[k+1]))
		}
		for i := start; i < end; i++ {
			out[i] = m
		}
	}
	n := int(hi.Sub(lo) / time.Minute)
	off := int(lo.Sub(inst[0]) / time.Minute)
	return out[off : off+n]
}

// offsetChanges lists the instants in [from, to) at which loc's UTC offset
// changes, to the minute.
func offsetChanges(loc *time.Location, from, to time.Time) []time.Time {
	var out []time.Time
	_, prev := from.In(loc).Zone()
	for t := from; t.Before(to); t = t.Add(time.Minute) {
		if _, off := t.In(loc).Zone(); off != prev {
			out = append(out, t)
			prev = off
		}
	}
	return out
}

func TestScheduleWindowMatchesBruteForce(t *testing.T) {
	if testing.Short() {
		t.Skip("minute-by-minute over a year's DST changes")
	}
	year := func(y int) [2]time.Time {
		return [2]time.Time{time.Date(y, 7, 1, 0, 0, 0, 0, time.UTC), time.Date(y+1, 7, 1, 0, 0, 0, 0, time.UTC)}
	}
	zones := []struct {
		name string
		span [2]time.Time
	}{
		{"Europe/Berlin", year(2026)},
		{"America/New_York", year(2026)},
		{"Australia/Lord_Howe", year(2026)}, // 30-min DST at 02:00
		{"America/Santiago", year(2026)},    // changes at midnight
		{"Pacific/Apia", year(2011)},        // 2011-12-30 skipped: a 24 h jump
		{"Antarctica/Troll", year(2026)},    // 2 h DST
		{"UTC", year(2026)},
	}
	crons := []string{"0 * * * *", "30 1 * * *", "*/15 * * * *", "@daily", "0 2 * * *", "30 2 * * *",
		"0 3 * * *", "0 1 * * *", "45 23 * * *", "0 22 * * *", "0 2 * * 0", "15 0 * * 6", "0 8 * * 1-5"}
	durs := []time.Duration{10 * time.Minute, 30 * time.Minute, 45 * time.Minute, time.Hour, 90 * time.Minute,
		2 * time.Hour, 6 * time.Hour, 23 * time.Hour, 25 * time.Hour, 30 * time.Hour}
	for _, z := range zones {
		loc, err := time.LoadLocation(z.name)
		if err != nil {
			t.Fatal(err)
		}
		changes := offsetChanges(loc, z.span[0], z.span[1])
		if z.name == "UTC" {
			changes = []time.Time{time.Date(2027, 3, 28, 1, 0, 0, 0, time.UTC)} // any day
		} else if len(changes) == 0 {
			t.Fatalf("%s: no offset change in %v", z.name, z.span)
		}
		maxD := slices.Max(durs)
		for _, ch := range changes {
			// Firings from a day and the longest window before the checked
			// span, ends a day and that window after it.
			k := newBruteClock(loc, ch.Add(-6*time.Hour-maxD-26*time.Hour), ch.Add(6*time.Hour+2*maxD+26*time.Hour))
			for _, cs := range crons {
				c := parseBruteCron(t, cs)
				for _, d := range durs {
					p := queuePolicy(4)
					p.Schedule = []ScheduleWindow{{Cron: cs, Duration: d, Min: 3, Location: z.name}}
					mustValidate(t, p)
					lo, hi := ch.Add(-6*time.Hour), ch.Add(d+6*time.Hour)
					want := bruteOpen(k, c, d, lo, hi)
					bad := 0
					for i, open := range want {
						for _, s := range []time.Duration{0, 30 * time.Second} {
							now := lo.Add(time.Duration(i)*time.Minute + s)
							got, w := p.floor(now)
							if (got == 3) != open.open {
								if bad < 3 {
									t.Errorf("%s (change %s): %q for %v at %s (%s): open %v, want %v", z.name, ch.In(loc).Format(time.RFC3339), cs, d, now.Format(time.RFC3339), now.In(loc).Format("2006-01-02T15:04:05 MST"), got == 3, open.open)
								}
								bad++
								continue
							}
							if w == nil || i%30 != 0 || s != 0 {
								continue
							}
							// The step's text (every 30 min: it is slow):
							// the same instants, as the zone's clock reads
							// them.
							text := "fired " + open.fired.In(loc).Format(time.RFC3339) + ", open until " + open.until.In(loc).Format(time.RFC3339)
							if !open.next.IsZero() {
								text += "; it fires again at " + open.next.In(loc).Format(time.RFC3339) + " before that, which keeps it open longer"
							}
							if gotText := w.open(now); gotText != text {
								if bad < 3 {
									t.Errorf("%s (change %s): %q for %v at %s (%s):\n got %s\nwant %s", z.name, ch.In(loc).Format(time.RFC3339), cs, d, now.Format(time.RFC3339), now.In(loc).Format("2006-01-02T15:04:05 MST"), gotText, text)
								}
								bad++
							}
						}
					}
					if bad >= 3 {
						t.Errorf("  ... %d minute(s) differ", bad)
					}
				}
			}
		}
	}
}
