package seasonal

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/replay"
)

var monday = time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)

// week returns hourly arrivals for one week from Monday 00:00: rate 1 req/s,
// 10 req/s at 15:00, weekend days at half.
func week() []float64 {
	a := make([]float64, 7*24+1)
	for j := 1; j < len(a); j++ {
		t := monday.Add(time.Duration(j-1) * time.Hour)
		r := 1.0
		if t.Hour() == 15 {
			r = 10
		}
		if wd := t.Weekday(); wd == time.Saturday || wd == time.Sunday {
			r /= 2
		}
		a[j] = r * 3600
	}
	return a
}

func TestBuildSeparableWeek(t *testing.T) {
	p, err := Build(monday, time.Hour, week(), nil, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if p.PeakHour != 15 {
		t.Errorf("peak hour %d, want 15", p.PeakHour)
	}
	// HourOfDay[15] = (5 × 10 + 2 × 5) / 7 = 60/7.
	if math.Abs(p.HourOfDay[15]-60.0/7) > 1e-9 {
		t.Errorf("hour 15 rate %v, want 60/7", p.HourOfDay[15])
	}
	// Weekend traffic is half of weekday traffic at every hour.
	if math.Abs(p.WeekendRatio-0.5) > 1e-9 {
		t.Errorf("weekend ratio %v, want 0.5", p.WeekendRatio)
	}
	// The data is exactly day factor × hour shape: R² = 1.
	if math.Abs(p.VarianceExplained-1) > 1e-9 {
		t.Errorf("variance explained %v, want 1", p.VarianceExplained)
	}
	if p.Days != 7 {
		t.Errorf("days %v, want 7", p.Days)
	}
}

func TestBuildSkipsGapsAndShortData(t *testing.T) {
	a := week()
	known := make([]bool, len(a))
	for j := range known {
		known[j] = j != 16 // Monday 15:00-16:00 unknown
	}
	p, err := Build(monday, time.Hour, a, known, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(p.Rate[time.Monday][15]) || p.Hours[time.Monday][15] != 0 {
		t.Errorf("Monday 15:00 = %v over %v hours, want NaN over 0", p.Rate[time.Monday][15], p.Hours[time.Monday][15])
	}
	// Expected falls back to the separable model there.
	if math.IsNaN(p.Expected(int(time.Monday), 15)) {
		t.Error("Expected(Monday, 15) is NaN, want the separable estimate")
	}
	if _, err := Build(monday, time.Hour, a[:10], nil, time.UTC); err != ErrTooShort {
		t.Errorf("10 hours: err %v, want ErrTooShort", err)
	}
}

func TestFloorWindowsAndRendering(t *testing.T) {
	var p Profile
	p.Location = time.UTC
	for d := range 7 {
		for h := range 24 {
			p.Rate[d][h] = 1
			if d >= 1 && d <= 5 && h >= 8 && h < 18 {
				p.Rate[d][h] = 10
			}
		}
	}
	twoWeeks(&p)
	// 10 req/s, 2 req/s per replica, 80%: floor(0.8 × 5) = 4; 1 req/s:
	// floor(0.4) = 0. Each hour recurs in both weeks.
	f, err := ProposeFloor(p, 2, 0.8)
	if err != nil {
		t.Fatal(err)
	}
	if f.Min[time.Wednesday][9] != 4 || f.Min[time.Wednesday][7] != 0 || f.Min[time.Saturday][9] != 0 {
		t.Errorf("floors %d %d %d, want 4 0 0", f.Min[time.Wednesday][9], f.Min[time.Wednesday][7], f.Min[time.Saturday][9])
	}
	ws := f.Windows(1)
	if len(ws) != 1 || ws[0].Cron() != "0 8 * * 1-5" || ws[0].Hours != 10 || ws[0].Min != 4 || ws[0].EndCron() != "0 18 * * 1-5" {
		t.Fatalf("windows %+v, want one: 0 8 * * 1-5 for 10h at 4, ending 0 18 * * 1-5", ws)
	}
	var y, k strings.Builder
	WriteScheduleYAML(&y, ws, "UTC")
	WriteKEDACron(&k, ws, "UTC")
	if want := "schedule:\n  - cron: \"0 8 * * 1-5\"\n    duration: 10h\n    desiredReplicas: 4\n    timezone: UTC\n"; y.String() != want {
		t.Errorf("schedule YAML:\n%s\nwant:\n%s", y.String(), want)
	}
	if !strings.Contains(k.String(), "type: cron") || !strings.Contains(k.String(), `end: "0 18 * * 1-5"`) || !strings.Contains(k.String(), `desiredReplicas: "4"`) {
		t.Errorf("KEDA triggers:\n%s", k.String())
	}
	// The windows are valid schedule options of a replay policy.
	if _, err := replay.ParsePolicy("queue:24" + PolicyOptions(ws, "UTC")); err != nil {
		t.Errorf("policy with schedule: %v", err)
	}
	// Timeline: Wednesday 09:00 reads 4, Saturday 09:00 reads 0.
	tl := f.Timeline(monday, time.Hour, 7*24)
	if tl[2*24+9] != 4 || tl[5*24+9] != 0 {
		t.Errorf("timeline Wed 9h %v, Sat 9h %v; want 4, 0", tl[2*24+9], tl[5*24+9])
	}
	if _, err := ProposeFloor(p, 0, 0.8); err == nil {
		t.Error("perReplica 0: want an error")
	}
}

func TestEndCronWraps(t *testing.T) {
	// 20:00 for 4 hours Monday-Saturday ends at 00:00 Tuesday-Sunday.
	w := Window{From: 1, To: 6, Hour: 20, Hours: 4, Min: 2}
	if got := w.EndCron(); got != "0 0 * * 2-6,0" {
		t.Errorf("EndCron %q, want 0 0 * * 2-6,0", got)
	}
}

// TestFloorCappedAtMax: a floor above the policy's max was rendered as a
// schedule the policy refuses ("min 2 must be in 0..max (1)", exit 1); Cap
// bounds it. 10 req/s at 2 req/s per replica, 80%: 4, capped at 3; a
// per-replica rate of 1e-300 does not overflow the conversion.
func TestFloorCappedAtMax(t *testing.T) {
	var p Profile
	p.Location = time.UTC
	for d := range 7 {
		for h := range 24 {
			p.Rate[d][h] = 10
		}
	}
	twoWeeks(&p)
	f, err := ProposeFloor(p, 2, 0.8)
	if err != nil {
		t.Fatal(err)
	}
	f.Cap(3)
	if f.Min[time.Monday][9] != 3 {
		t.Errorf("floor %d, want 4 capped at 3", f.Min[time.Monday][9])
	}
	if ws := f.Windows(1); len(ws) == 0 || ws[0].Min != 3 {
		t.Errorf("windows %+v, want min 3", ws)
	}
	huge, err := ProposeFloor(p, 1e-300, 0.8)
	if err != nil {
		t.Fatal(err)
	}
	if v := huge.Min[time.Monday][9]; v != math.MaxInt32 {
		t.Errorf("floor at 1e-300 req/s per replica: %d, want %d (bounded, not overflowed)", v, math.MaxInt32)
	}
}

// twoWeeks gives a hand-set profile two identical weeks of occurrences.
func twoWeeks(p *Profile) {
	for d := range 7 {
		for h := range 24 {
			p.Occurrences[d][h] = []float64{p.Rate[d][h], p.Rate[d][h]}
		}
	}
}

// hourlyFloor profiles n hours from Monday 00:00 at the given rate (one
// step per hour) and proposes the floor at 2 req/s per replica, fraction 1.
func hourlyFloor(t *testing.T, n int, rate func(t time.Time) float64) Floor {
	t.Helper()
	a := make([]float64, n+1)
	for j := 1; j <= n; j++ {
		a[j] = rate(monday.Add(time.Duration(j-1)*time.Hour)) * 3600
	}
	p, err := Build(monday, time.Hour, a, nil, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	f, err := ProposeFloor(p, 2, 1)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// TestFloorNeedsRecurrence: one week at 1 req/s, a daily peak of 8 req/s
// at 10:00 on all 7 days, and one Wednesday spike of 20 req/s at 15:00.
// At 2 req/s per replica and fraction 1: the baseline needs floor(1/2) = 0;
// the daily peak floor(8/2) = 4 recurs on 7 days (>= MinDays), so it is
// proposed at 10:00 (Monday..Saturday, Sunday alone) with support 7; the
// spike would be floor(20/2) = 10 but 15:00 reaches 2 req/s (one replica's
// worth) on 1 day only: no window.
func TestFloorNeedsRecurrence(t *testing.T) {
	f := hourlyFloor(t, 7*24, func(t time.Time) float64 {
		switch {
		case t.Hour() == 10:
			return 8
		case t.Weekday() == time.Wednesday && t.Hour() == 15:
			return 20
		}
		return 1
	})
	if f.Min[time.Wednesday][15] != 0 || f.Support[time.Wednesday][15] != 0 {
		t.Errorf("Wednesday 15:00 floor %d (support %d), want 0: one spike is not a schedule",
			f.Min[time.Wednesday][15], f.Support[time.Wednesday][15])
	}
	ws := f.Windows(1)
	if len(ws) != 2 {
		t.Fatalf("windows %+v, want the daily 10:00 peak only (1-6 and 0)", ws)
	}
	for i, want := range []string{"0 10 * * 1-6", "0 10 * * 0"} {
		if w := ws[i]; w.Cron() != want || w.Hours != 1 || w.Min != 4 || w.Support != 7 {
			t.Errorf("window %d = %+v (%s), want %s for 1h at 4, support 7", i, w, w.Cron(), want)
		}
	}
}

// TestFloorRecursWeekly: two weeks at 1 req/s with a 20 req/s Wednesday
// 15:00 in both: 15:00 reaches the spike on 2 days only (< MinDays), but
// Wednesday 15:00 recurs in 2 weeks (MinWeeks): floor(20/2) = 10, support
// 2. With the spike in the first week only there is no window.
func TestFloorRecursWeekly(t *testing.T) {
	for _, tc := range []struct {
		weeks int
		want  []Window
	}{
		{2, []Window{{From: time.Wednesday, To: time.Wednesday, Hour: 15, Hours: 1, Min: 10, Support: 2}}},
		{1, nil},
	} {
		f := hourlyFloor(t, 14*24, func(t time.Time) float64 {
			if t.Weekday() == time.Wednesday && t.Hour() == 15 && t.Before(monday.AddDate(0, 0, 7*tc.weeks)) {
				return 20
			}
			return 1
		})
		if ws := f.Windows(1); !slices.Equal(ws, tc.want) {
			t.Errorf("spike in %d of 2 weeks: windows %+v, want %+v", tc.weeks, ws, tc.want)
		}
	}
}

// TestFloorFromHeldReplicas: a week of the replicas a policy held, in 30 s
// steps (replica-seconds per step), built around a daily cycle: 1 replica,
// 5 from 10:00 to 18:00 on weekdays, 2 then on weekends. Profiled as a
// rate (mean replicas) with one replica per unit, the floor is
// floor(0.8 × 5) = 4 replicas over the weekday hours (five days recur)
// and floor(0.8 × 2) = 1 on the weekend (no more than the policy's min):
// one window, Monday to Friday at 10:00 for 8 hours at 4.
func TestFloorFromHeldReplicas(t *testing.T) {
	const step = 30 * time.Second
	held := make([]float64, 7*24*120+1)
	for j := 1; j < len(held); j++ {
		at := monday.Add(time.Duration(j-1) * step)
		n := 1.0
		if h := at.Hour(); h >= 10 && h < 18 {
			n = 5
			if wd := at.Weekday(); wd == time.Saturday || wd == time.Sunday {
				n = 2
			}
		}
		held[j] = n * step.Seconds()
	}
	p, err := Build(monday, step, held, nil, time.UTC)
	if err != nil {
		t.Fatal(err)
	}
	if p.PeakHour < 10 || p.PeakHour >= 18 || p.Rate[1][12] != 5 || p.Rate[1][3] != 1 {
		t.Fatalf("peak hour %d, Monday 12:00 %g, 03:00 %g: want the cycle read back", p.PeakHour, p.Rate[1][12], p.Rate[1][3])
	}
	f, err := ProposeFloor(p, 1, 0.8)
	if err != nil {
		t.Fatal(err)
	}
	ws := f.Windows(1)
	if len(ws) != 1 || ws[0].Cron() != "0 10 * * 1-5" || ws[0].Hours != 8 || ws[0].Min != 4 || ws[0].Support != 5 {
		t.Errorf("windows %+v, want one 0 10 * * 1-5 for 8h at 4 supported by 5 days", ws)
	}
}

// TestBuildHalfHourZone: in a zone half an hour off UTC (Asia/Kolkata,
// +05:30) the hours are the local clock's, 10:00 to 11:00, as a schedule's
// cron reads them (Floor.Timeline too). Truncating the instant to the hour
// gave buckets from :30 to :30 local: a burst of 10 req/s at exactly 10:00
// to 11:00 read as 5.5 req/s at 09 and at 10.
func TestBuildHalfHourZone(t *testing.T) {
	loc, err := time.LoadLocation("Asia/Kolkata")
	if err != nil {
		t.Skipf("no tzdata: %v", err)
	}
	start := time.Date(2026, 1, 5, 0, 0, 0, 0, loc) // Monday 00:00 local
	step := 30 * time.Minute
	a := make([]float64, 3*48+1)
	for j := 1; j < len(a); j++ {
		r := 1.0
		if h := start.Add(time.Duration(j-1) * step).In(loc).Hour(); h == 10 {
			r = 10
		}
		a[j] = r * step.Seconds()
	}
	p, err := Build(start, step, a, nil, loc)
	if err != nil {
		t.Fatal(err)
	}
	for h, want := range map[int]float64{9: 1, 10: 10, 11: 1} {
		if got := p.Rate[time.Monday][h]; math.Abs(got-want) > 1e-9 {
			t.Errorf("Monday %02d:00 rate %g, want %g", h, got, want)
		}
	}
	if p.PeakHour != 10 || p.Days != 3 {
		t.Errorf("peak hour %d, days %g; want 10 and 3", p.PeakHour, p.Days)
	}
}

// TestBuildFallBackHourOnce: the clock hour a DST fall-back repeats
// (America/New_York, Sunday 2026-11-01, 01:00 to 02:00 twice) is one hour
// of that day: one occurrence, at the mean rate of its two instances. Read
// as two occurrences, one Sunday's burst at 01:00 looked like the same
// weekday and hour in seasonal.MinWeeks = 2 weeks, and a floor was proposed
// from it.
func TestBuildFallBackHourOnce(t *testing.T) {
	loc, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Skipf("no tzdata: %v", err)
	}
	start := time.Date(2026, 10, 30, 0, 0, 0, 0, loc) // Friday 00:00 local
	step := 30 * time.Minute
	end := time.Date(2026, 11, 3, 0, 0, 0, 0, loc) // 97 hours later
	n := int(end.Sub(start) / step)
	a := make([]float64, n+1)
	for j := 1; j <= n; j++ {
		lt := start.Add(time.Duration(j-1) * step).In(loc)
		r := 1.0
		if lt.Weekday() == time.Sunday && lt.Hour() == 1 {
			r = 4
		}
		a[j] = r * step.Seconds()
	}
	p, err := Build(start, step, a, nil, loc)
	if err != nil {
		t.Fatal(err)
	}
	if occ := p.Occurrences[time.Sunday][1]; len(occ) != 1 || occ[0] != 4 {
		t.Errorf("Sunday 01:00 occurrences %v, want [4]: one day's hour", occ)
	}
	// 4 days of clock hours (Sunday has 25 h of time but 24 clock hours).
	if p.Days != 4 {
		t.Errorf("days %v, want 4", p.Days)
	}
	// Replicas held: 4 at Sunday 01:00 once, 1 elsewhere: nothing recurs.
	f, err := ProposeFloor(p, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	if m := f.Min[time.Sunday][1]; m > 1 {
		t.Errorf("floor Sunday 01:00 %d (support %d), want at most 1: one Sunday is no recurrence", m, f.Support[time.Sunday][1])
	}
}

// TestCheckStep: a step fits the clock hours when it divides an hour and
// the zone's offsets. Worked by hand: 7m and 40m leave 60 mod 7 = 4 and
// 60 mod 40 = 20 minutes; Asia/Kolkata is +05:30, gcd(60m, 330m) = 30m, so
// 30m fits and 1h does not; Asia/Kathmandu is +05:45, gcd(60m, 345m) =
// 15m, so 15m fits and 30m, 20m do not; Europe/Berlin is +01:00 or +02:00,
// whole hours, so 1h fits across its spring-forward (2027-03-28).
func TestCheckStep(t *testing.T) {
	load := func(name string) *time.Location {
		l, err := time.LoadLocation(name)
		if err != nil {
			t.Skip(err)
		}
		return l
	}
	from := time.Date(2027, 3, 24, 0, 0, 0, 0, time.UTC)
	to := from.Add(7 * 24 * time.Hour)
	for _, c := range []struct {
		step time.Duration
		zone string
		want string // "" fits
	}{
		{30 * time.Second, "UTC", ""},
		{15 * time.Minute, "UTC", ""},
		{time.Hour, "UTC", ""},
		{7 * time.Minute, "UTC", "7m0s does not divide an hour"},
		{40 * time.Minute, "UTC", "40m0s does not divide an hour"},
		{2 * time.Hour, "UTC", "2h0m0s does not divide an hour"},
		{30 * time.Minute, "Asia/Kolkata", ""},
		{time.Hour, "Asia/Kolkata", "Asia/Kolkata is UTC+05:30 in the range, so 1h0m0s steps straddle its clock hours: want one that divides 30m0s"},
		{15 * time.Minute, "Asia/Kathmandu", ""},
		{30 * time.Minute, "Asia/Kathmandu", "want one that divides 15m0s"},
		{20 * time.Minute, "Asia/Kathmandu", "want one that divides 15m0s"},
		{time.Hour, "Europe/Berlin", ""},
	} {
		err := CheckStep(c.step, load(c.zone), from, to)
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("CheckStep(%s, %s) = %v, want %q", c.step, c.zone, err, c.want)
		}
	}
}

// TestWindowDSTDays: the changes in a year around which KEDA's cron
// trigger for a window and serve's schedule hold the floor at different
// times, worked from the tz rules and robfig/cron v3.0.1's walk (Next adds
// a second, then fixes month, day, hour, minute in turn: a wrong hour is
// first set to its :00 with time.Date, then hours are added one by one).
// Berlin springs forward on 2027-03-28 at 01:00Z (02:00 CET -> 03:00 CEST)
// and falls back on 2027-10-31 at 01:00Z (03:00 CEST -> 02:00 CET: 02:00 is
// read at 00:00Z and at 01:00Z); New York falls back on 2026-11-01 at
// 06:00Z (02:00 EDT -> 01:00 EST: 01:00 is read at 05:00Z and at 06:00Z).
// Antarctica/Troll's changes are 2 h: 2026-10-25 at 01:00Z (03:00 +02 ->
// 01:00 +00: 01:00-03:00 read twice; time.Date takes the second reading),
// 2027-03-28 at 01:00Z (01:00 +00 -> 03:00 +02: 01:00-03:00 skipped).
// Australia/Lord_Howe's are 30 min: 2026-10-03 at 15:30Z (02:00 +1030 ->
// 02:30 +11), 2027-04-03 at 15:00Z (02:00 +11 -> 01:30 +1030).
func TestWindowDSTDays(t *testing.T) {
	load := func(name string) *time.Location {
		l, err := time.LoadLocation(name)
		if err != nil {
			t.Skip(err)
		}
		return l
	}
	berlin, ny, troll, lordHowe := load("Europe/Berlin"), load("America/New_York"), load("Antarctica/Troll"), load("Australia/Lord_Howe")
	from := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	october := time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC)
	july := time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	span := func(a, b string) []Span { return []Span{{utc(a), utc(b)}} }
	type day struct {
		change          string
		keda, serveOnly []Span
	}
	for _, tc := range []struct {
		name string
		w    Window
		loc  *time.Location
		from time.Time
		want []day
	}{
		// 00:00 to 06:00: a change falls inside, its ends untouched: the same.
		{"Sunday 00:00 6h, Berlin", Window{From: 0, To: 0, Hour: 0, Hours: 6, Min: 2}, berlin, from, nil},
		{"weekdays 08:00 12h, Berlin", Window{From: 1, To: 5, Hour: 8, Hours: 12, Min: 2}, berlin, from, nil},
		// A skipped start: robfig never fires it, so from the week
		// before's end (06:00 CET, 05:00Z) KEDA's next start is the next
		// week's, after this week's end: it holds the floor until the jump,
		// where serve opens. A repeated start: serve opens at the first
		// reading (00:00Z); robfig, from 01:xx CEST, sets 01:00 and adds an
		// hour: 02:00 CEST; but from 02:xx CEST time.Date(02:00) is 02:00 CET,
		// 01:00Z, where KEDA opens.
		{"Sunday 02:00 4h, Berlin", Window{From: 0, To: 0, Hour: 2, Hours: 4, Min: 2}, berlin, from, []day{
			{"2027-03-28T01:00:00Z", span("2027-03-21T05:00:00Z", "2027-03-28T01:00:00Z"), nil},
			{"2027-10-31T01:00:00Z", nil, span("2027-10-31T00:00:00Z", "2027-10-31T01:00:00Z")},
		}},
		// Saturday 22:00 to Sunday 02:00: its end skipped on 2027-03-28, so
		// KEDA's next end is the next week's, after its next start: it does
		// not open; serve holds it to the jump, 01:00Z. Its end repeated on
		// 2027-10-31: the same in both.
		{"Saturday 22:00 4h, Berlin", Window{From: 6, To: 6, Hour: 22, Hours: 4, Min: 2}, berlin, from, []day{
			{"2027-03-28T01:00:00Z", nil, span("2027-03-27T21:00:00Z", "2027-03-28T01:00:00Z")},
		}},
		{"Sunday 01:00 5h, New York", Window{From: 0, To: 0, Hour: 1, Hours: 5, Min: 2}, ny, october, []day{
			{"2026-11-01T06:00:00Z", nil, span("2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z")},
		}},
		// Troll, start 02:00 repeated: from 01:xx +02 robfig's time.Date(01:00)
		// is 01:00 +00 (01:00Z), past 02:00 +02 (00:00Z): KEDA opens at 02:00
		// +00 (02:00Z), serve at 00:00Z. Start skipped: as Berlin's, from the
		// week before's end (06:00Z) to the jump.
		{"Sunday 02:00 4h, Troll", Window{From: 0, To: 0, Hour: 2, Hours: 4, Min: 2}, troll, october, []day{
			{"2026-10-25T01:00:00Z", nil, span("2026-10-25T00:00:00Z", "2026-10-25T02:00:00Z")},
			{"2027-03-28T01:00:00Z", span("2027-03-21T06:00:00Z", "2027-03-28T01:00:00Z"), nil},
		}},
		// Troll, start 01:00 repeated, end 02:00: serve opens at the first
		// reading of 01:00 (23:00Z). From 01:xx +02, KEDA's next end is
		// time.Date(01:00) = 01:00Z plus an hour, 02:00Z, after its next
		// start (01:00 +00 = 01:00Z): closed; from 02:00 +02 (00:00Z) its next
		// start is next week's (time.Date(02:00) = 02:00Z is past 01:00Z), its
		// next end 02:00Z: open. On 2027-03-28 01:00 to 02:00 lies in the gap:
		// neither opens it.
		{"Sunday 01:00 1h, Troll", Window{From: 0, To: 0, Hour: 1, Hours: 1, Min: 2}, troll, october, []day{
			{"2026-10-25T01:00:00Z", nil, span("2026-10-24T23:00:00Z", "2026-10-25T00:00:00Z")},
		}},
		// Troll, end 01:00 repeated: serve closes at its last reading,
		// 01:00Z. From 02:00 +02 (00:00Z) robfig's time.Date(02:00) is 02:00Z,
		// past 01:00 +00 (01:00Z): KEDA's next end is next week's, after its
		// next start: it closes at 00:00Z, an hour early. End skipped on
		// 2027-03-28: KEDA does not open; serve holds it from 00:00Z to the
		// jump.
		{"Sunday 00:00 1h, Troll", Window{From: 0, To: 0, Hour: 0, Hours: 1, Min: 2}, troll, october, []day{
			{"2026-10-25T01:00:00Z", nil, span("2026-10-25T00:00:00Z", "2026-10-25T01:00:00Z")},
			{"2027-03-28T01:00:00Z", nil, span("2027-03-28T00:00:00Z", "2027-03-28T01:00:00Z")},
		}},
		// Lord Howe, start 02:00 skipped: robfig adds an hour to 01:00 +1030
		// and lands on 02:30 +11, off the hour, so from before the change it
		// misses both 02:00 and 06:00 that day (next: the next week's) and
		// holds nothing; from 02:30 +11 time.Date(02:00) is 02:30 too; from
		// 03:00 +11 (16:00Z) its next start is next week's and its next end
		// 06:00: open. serve opens at the jump, 15:30Z. Not at the fall-back:
		// 02:00 +1030 comes after the repeated 01:30-02:00.
		{"Sunday 02:00 4h, Lord Howe", Window{From: 0, To: 0, Hour: 2, Hours: 4, Min: 2}, lordHowe, july, []day{
			{"2026-10-03T15:30:00Z", nil, span("2026-10-03T15:30:00Z", "2026-10-03T16:00:00Z")},
		}},
		// Lord Howe, Sunday 20:00 to Monday 00:00, untouched on the clock:
		// from the occurrence before's end (Monday 00:00, 2026-09-27 13:30Z)
		// KEDA's next start walks across the change, lands on 20:30 and
		// misses it (next: a week later), while its next end is the coming
		// Monday's: it holds the floor until 03:00 +11 (16:00Z), from which
		// the walk starts on the hour. Likewise at the fall-back, from
		// 2027-03-28 13:00Z (00:00 +11) to 02:00 +1030 (15:30Z).
		{"Sunday 20:00 4h, Lord Howe", Window{From: 0, To: 0, Hour: 20, Hours: 4, Min: 2}, lordHowe, july, []day{
			{"2026-10-03T15:30:00Z", span("2026-09-27T13:30:00Z", "2026-10-03T16:00:00Z"), nil},
			{"2027-04-03T15:00:00Z", span("2027-03-28T13:00:00Z", "2027-04-03T15:30:00Z"), nil},
		}},
		{"Sunday 02:00 4h, UTC", Window{From: 0, To: 0, Hour: 2, Hours: 4, Min: 2}, time.UTC, from, nil},
	} {
		got, err := tc.w.DSTDays(tc.loc, tc.from)
		if err != nil {
			t.Fatal(err)
		}
		same := func(a, b []Span) bool {
			return slices.EqualFunc(a, b, func(x, y Span) bool { return x.From.Equal(y.From) && x.To.Equal(y.To) })
		}
		ok := len(got) == len(tc.want)
		for i := 0; ok && i < len(got); i++ {
			g, w := got[i], tc.want[i]
			ok = g.Change.Equal(utc(w.change)) && same(g.KEDAOnly, w.keda) && same(g.ServeOnly, w.serveOnly)
		}
		if !ok {
			t.Errorf("%s: %+v\nwant %+v", tc.name, got, tc.want)
		}
	}
}
