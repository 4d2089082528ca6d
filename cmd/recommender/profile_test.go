package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/backtest"
	"github.com/infscale/infscale/pkg/replay"
	"github.com/infscale/infscale/pkg/seasonal"
	"github.com/infscale/infscale/pkg/synthweek"
	"github.com/infscale/infscale/pkg/synthweek/synthweektest"
)

// testProfile profiles the whole synthetic week: the generator peaks at
// 15:00 UTC and runs weekends at 0.4 of weekdays (synthweek.Config defaults).
func testProfile(t *testing.T, url string, truth synthweek.Truth) {
	args := []string{"profile", "--prometheus-url", url, "--selector", `{namespace="llm"}`,
		"--start", fmt.Sprint(truth.Start.Unix()), "--end", fmt.Sprint(truth.End.Unix()), "--step", "2m",
		"--no-simulate", "--output", "json"}
	var out, errb bytes.Buffer
	if code := run(context.Background(), args, nil, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var p struct {
		PeakHour          int              `json:"peak_hour"`
		WeekendRatio      float64          `json:"weekend_ratio"`
		VarianceExplained float64          `json:"variance_explained"`
		Days              float64          `json:"days"`
		Floor             map[string][]int `json:"floor"`
		Schedule          []struct {
			Cron string `json:"cron"`
			Min  int    `json:"min"`
		} `json:"schedule"`
	}
	if err := json.Unmarshal(out.Bytes(), &p); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if p.PeakHour != truth.PeakHour {
		t.Errorf("peak hour %d, want %d", p.PeakHour, truth.PeakHour)
	}
	// Weekend traffic is 0.4 of weekday traffic at every hour; the spike
	// (Wednesday, +2 × rate for 30 min) lifts weekdays by ~0.3%.
	if math.Abs(p.WeekendRatio-truth.WeekendFactor) > 0.02 {
		t.Errorf("weekend ratio %.3f, want %.2f", p.WeekendRatio, truth.WeekendFactor)
	}
	// The generated rate is exactly day factor × hour shape (plus Poisson
	// noise and one spike): the separable model explains nearly all of it.
	if p.VarianceExplained < 0.95 {
		t.Errorf("variance explained %.3f, want >= 0.95", p.VarianceExplained)
	}
	// Friday 16:00 lost 20 of its 60 minutes to the gap and still counts
	// (>= half the hour known); 7 days less nothing.
	if p.Days < 6.9 || p.Days > 7.01 {
		t.Errorf("days %.2f, want about 7", p.Days)
	}
	// Floors are higher at the weekday peak than on Saturday's.
	if p.Floor["Mon"][15] <= p.Floor["Sat"][15] || p.Floor["Mon"][15] <= p.Floor["Mon"][3] {
		t.Errorf("floors Mon 15h %d, Sat 15h %d, Mon 3h %d: want the weekday peak highest", p.Floor["Mon"][15], p.Floor["Sat"][15], p.Floor["Mon"][3])
	}
	// The week is built around a daily cycle: the floor (0.8 of the replicas
	// queue:24 held in the replay) proposes a weekday window over the 15:00
	// peak (it proposed none when a replica's throughput came from the
	// replica model alone, 11 req/s against the replay's 3 to 6).
	covered := false
	for _, w := range p.Schedule {
		var hour int
		var days string
		if _, err := fmt.Sscanf(w.Cron, "0 %d * * %s", &hour, &days); err == nil && hour <= 15 && w.Min >= 2 && days != "0" && days != "6" {
			covered = true
		}
	}
	if !covered {
		t.Errorf("schedule %+v: want a weekday window of at least 2 replicas starting by 15:00", p.Schedule)
	}
	// The Wednesday spike happens once: it may raise no floor (a floor must
	// recur, seasonal.MinDays / MinWeeks). Its hour's floor is no higher
	// than the same hour's on the other weekdays: the daily cycle's, not
	// the spike's. (A window may still start at that hour: the cycle's
	// floor steps up around then, on some days an hour earlier or later.)
	spike := truth.Spike[0].UTC()
	sd, sh := dayNames[spike.Weekday()], spike.Hour()
	others := 0
	for _, d := range []string{"Mon", "Tue", "Wed", "Thu", "Fri"} {
		if d != sd {
			others = max(others, p.Floor[d][sh])
		}
	}
	if got := p.Floor[sd][sh]; got > others {
		t.Errorf("floor %s %02d:00 (the spike) %d, above the other weekdays' %d at that hour: proposed from the one spike", sd, sh, got, others)
	}

	// Three days with the replays: reactive only, schedule only, both
	// (three, as a window must recur on seasonal.MinDays days). queue:8
	// holds more replicas than queue:24 in the afternoon, and the floor is
	// 0.8 of them.
	day := truth.Start.Add(24 * time.Hour)
	args = []string{"profile", "--prometheus-url", url, "--selector", `{namespace="llm"}`,
		"--start", fmt.Sprint(day.Unix()), "--end", fmt.Sprint(day.Add(3 * 24 * time.Hour).Unix()), "--step", "2m", "--policy", "queue:8"}
	out.Reset()
	if code := run(context.Background(), args, nil, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, s := range []string{"occurrences support it", "schedule:", "type: cron", "queue:8 (reactive only)", "schedule only", "queue:8 + schedule", "peak hour"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("text output lacks %q", s)
		}
	}
	t.Logf("\n%s", out.String())

	// One day: no hour can recur on seasonal.MinDays = 3 days, so there is
	// no window and no schedule to add; the replay says so and has no
	// "both" row (it announced one).
	args = []string{"profile", "--prometheus-url", url, "--selector", `{namespace="llm"}`,
		"--start", fmt.Sprint(day.Unix()), "--end", fmt.Sprint(day.Add(24 * time.Hour).Unix()), "--step", "2m", "--policy", "queue:8"}
	out.Reset()
	if code := run(context.Background(), args, nil, &out, &errb); code != exitOK {
		t.Fatalf("one day: exit %d: %s", code, errb.String())
	}
	for _, s := range []string{"  none: no hour needs more", "no schedule to add to the reactive policy, so no \"schedule only\" or \"both\" row", "queue:8 (reactive only)"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("one day: text output lacks %q:\n%s", s, out.String())
		}
	}
	if strings.Contains(out.String(), "queue:8 + schedule") || strings.Contains(out.String(), "schedule only, both") || strings.Contains(out.String(), ScheduleOnlyRow) {
		t.Errorf("one day: a \"schedule only\" or \"both\" row or its announcement without a schedule:\n%s", out.String())
	}
}

// TestPrometheusRangeFlagsDocumented: every flag of backtest and profile (except
// the replica flags, docs/replica.md's) appears in docs/backtest.md.
func TestPrometheusRangeFlagsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/backtest.md")
	if err != nil {
		t.Skipf("docs/backtest.md not readable: %v", err)
	}
	var names []string
	var walk func(reflect.Type)
	walk = func(typ reflect.Type) {
		for i := range typ.NumField() {
			f := typ.Field(i)
			if f.Type == reflect.TypeOf(ReplicaFlags{}) || !f.IsExported() {
				continue
			}
			if _, ok := f.Tag.Lookup("embed"); ok {
				walk(f.Type)
				continue
			}
			n := f.Tag.Get("name")
			if n == "" { // kong's default: the field name in kebab case
				for i, r := range f.Name {
					if i > 0 && r >= 'A' && r <= 'Z' {
						n += "-"
					}
					n += strings.ToLower(string(r))
				}
			}
			names = append(names, n)
		}
	}
	walk(reflect.TypeOf(BacktestCmd{}))
	walk(reflect.TypeOf(ProfileCmd{}))
	for _, n := range names {
		if !strings.Contains(string(doc), "`--"+n) {
			t.Errorf("docs/backtest.md does not document --%s", n)
		}
	}
}

// TestHeldReplicaSeconds: a timeline sampled every 15 s on a 30 s grid
// gives each step the mean replicas asked for in it × 30 s; a step with no
// sample keeps the last mean; a step before the first sample is unknown,
// and so is a step the history does not know.
func TestHeldReplicaSeconds(t *testing.T) {
	tl := []replay.Sample{{T: 45, Desired: 2}, {T: 60, Desired: 4}, {T: 75, Desired: 4}, {T: 90, Desired: 4}}
	held, known := heldReplicaSeconds(tl, 30, 4, []bool{true, true, true, false, true})
	// Step 1 (0-30 s): no sample yet. Step 2 (30-60): (2+4)/2 = 3 → 90.
	// Step 3 (60-90): 4 → 120, but the history lost it. Step 4 (90-120):
	// none in it, the last 4 → 120.
	if want := []float64{0, 0, 90, 120, 120}; !reflect.DeepEqual(held, want) {
		t.Errorf("held %v, want %v", held, want)
	}
	if want := []bool{false, false, true, false, true}; !reflect.DeepEqual(known, want) {
		t.Errorf("known %v, want %v", known, want)
	}
}

// TestProfileTextSaysWhenTheFloorNeverBinds: when "P + schedule" replays
// exactly as "P (reactive only)" (same replica time, same misses), the
// text says the floor changed nothing, and labels the schedule-only row as
// the floor alone.
func TestProfileTextSaysWhenTheFloorNeverBinds(t *testing.T) {
	row := func(name string, rs float64, late int64) backtest.Row {
		return backtest.Row{Result: replay.Result{Policy: name, Requests: 100, Met: 100 - late, Late: late, ReplicaSeconds: rs}, SavingsPct: math.NaN(), Max: 100}
	}
	o := profileOut{policy: "queue:24", fraction: 0.8, zone: "UTC",
		windows: []seasonal.Window{{From: time.Monday, To: time.Friday, Hour: 10, Hours: 8, Min: 2, Support: 5}},
		sim: &backtest.Report{Step: time.Minute, Policies: []backtest.Row{
			row("queue:24 (reactive only)", 600, 1), row(ScheduleOnlyRow, 300, 40), row("queue:24 + schedule", 600, 1)}}}
	var b bytes.Buffer
	if err := o.writeText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"queue:24 + schedule: the same as reactive only", ScheduleOnlyRow + ": the floor alone, with no reactive scaling: it covers 80%"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
	o.sim.Policies[2].ReplicaSeconds = 660 // the floor held replicas once
	b.Reset()
	if err := o.writeText(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "the same as reactive only") {
		t.Errorf("says the floor changed nothing when it did:\n%s", b.String())
	}
}

// TestProfileRangeShrunkToData: --start before the first sample (less
// retention than asked, a new target) shrinks the range to the data; the
// hours are those of the data, not of --start. Two weekdays from Monday
// 2026-01-05 peaking at 15:00 UTC (no spike: it lies on the third day),
// asked from 1 day 5 h before: read from --start, Monday 15:00 would be
// labelled Sunday 10:00, and Monday 00:00 Saturday 19:00.
func TestProfileRangeShrunkToData(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled history")
	}
	srv, truth := synthweektest.Serve(t, synthweek.Config{Days: 2, Scrape: 2 * time.Minute})
	asked := truth.Start.Add(-29 * time.Hour)
	args := []string{"profile", "--prometheus-url", srv.URL, "--selector", `{namespace="llm"}`,
		"--start", fmt.Sprint(asked.Unix()), "--end", fmt.Sprint(truth.End.Unix()), "--step", "2m",
		"--no-simulate", "--output", "json"}
	var out, errb bytes.Buffer
	if code := run(context.Background(), args, nil, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var p struct {
		Start    time.Time             `json:"start"`
		PeakHour int                   `json:"peak_hour"`
		Rates    map[string][]*float64 `json:"rate_by_day_hour"`
		Floor    map[string][]int      `json:"floor"`
	}
	if err := json.Unmarshal(out.Bytes(), &p); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !p.Start.Equal(truth.Start) {
		t.Errorf("start %s, want the first sample's %s", p.Start, truth.Start)
	}
	// The cosine peaks at 15:00 exactly: hours 14 and 15 tie.
	if p.PeakHour != 14 && p.PeakHour != 15 {
		t.Errorf("peak hour %d, want 14 or 15", p.PeakHour)
	}
	// Monday and Tuesday hold data; the other days none.
	for _, d := range []string{"Mon", "Tue"} {
		if p.Rates[d][15] == nil {
			t.Errorf("%s 15:00 has no rate, want the data's", d)
		}
	}
	for _, d := range []string{"Wed", "Thu", "Fri", "Sat", "Sun"} {
		for h, r := range p.Rates[d] {
			if r != nil {
				t.Errorf("%s %02d:00 rate %g: the history has only Monday and Tuesday", d, h, *r)
			}
		}
	}
	// The text names the range asked beside the data's.
	args[len(args)-1] = "text"
	out.Reset()
	if code := run(context.Background(), args, nil, &out, &errb); code != exitOK {
		t.Fatalf("text: exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"history   2026-01-05T00:00:00Z .. ", "range   asked 2026-01-03T19:00:00Z .. "} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, out.String())
		}
	}
}

// TestProfileTextNamesDaysWithoutData: weekdays without data have no rate
// and no floor (Profile.Expected is NaN there), and the note says so,
// naming them; it said they were "estimated from the hour-of-day shape".
// A history just short of 7 days that touches every weekday (the
// synthetic week asked from a minute past its start) has no note.
func TestProfileTextNamesDaysWithoutData(t *testing.T) {
	var p seasonal.Profile
	for d := range 7 {
		p.DayOfWeek[d] = 10
	}
	for _, d := range []time.Weekday{time.Thursday, time.Friday, time.Saturday, time.Sunday} {
		p.DayOfWeek[d] = math.NaN()
	}
	p.Days = 3
	o := profileOut{p: p, policy: "queue:24", fraction: 0.8, zone: "UTC"}
	var b bytes.Buffer
	if err := o.writeText(&b); err != nil {
		t.Fatal(err)
	}
	if want := "note      no data on Thu, Fri, Sat, Sun: no rate and no floor there (a week of history covers every weekday)"; !strings.Contains(b.String(), want) {
		t.Errorf("text lacks %q:\n%s", want, b.String())
	}
	if strings.Contains(b.String(), "estimated") {
		t.Errorf("text says days without data are estimated:\n%s", b.String())
	}
	for d := range 7 {
		o.p.DayOfWeek[d] = 10
	}
	o.p.Days = 6.96
	b.Reset()
	if err := o.writeText(&b); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.String(), "note ") {
		t.Errorf("a note on a history with every weekday:\n%s", b.String())
	}
}

// TestProfileScaleToZeroFloorOfOne: for a policy that scales to zero
// (min=0), floors at or below its minimum are left out, so a floor of 1
// is a window (one replica kept warm through the busy hours): every
// weekday hour whose floor is 1 or more lies in a window of at least that
// many. Before, floors of 1 were left out whatever the minimum, and the
// hours where a zero target most needs a warm replica had none.
func TestProfileScaleToZeroFloorOfOne(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled history")
	}
	srv, truth := synthweektest.Serve(t, synthweek.Config{Days: 4, Scrape: 2 * time.Minute})
	args := []string{"profile", "--prometheus-url", srv.URL, "--selector", `{namespace="llm"}`,
		"--start", fmt.Sprint(truth.Start.Unix()), "--end", fmt.Sprint(truth.End.Unix()), "--step", "2m",
		"--policy", "queue:24,min=0,cooldown=120", "--output", "json"}
	var out, errb bytes.Buffer
	if code := run(context.Background(), args, nil, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var p struct {
		Floor    map[string][]int `json:"floor"`
		Schedule []struct {
			Cron     string `json:"cron"`
			Duration string `json:"duration"`
			Min      int    `json:"min"`
		} `json:"schedule"`
		Simulation *struct {
			Policies []struct {
				Policy string `json:"policy"`
			} `json:"policies"`
		} `json:"simulation"`
	}
	if err := json.Unmarshal(out.Bytes(), &p); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	ones := 0
	for d, name := range []string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"} {
		for h, f := range p.Floor[name] {
			if f < 1 {
				continue
			}
			ones++
			covered := false
			for _, w := range p.Schedule {
				var hour int
				var days string
				dur, err := time.ParseDuration(w.Duration)
				if _, err2 := fmt.Sscanf(w.Cron, "0 %d * * %s", &hour, &days); err != nil || err2 != nil {
					t.Fatalf("window %+v: unreadable", w)
				}
				if w.Min >= f && h >= hour && h < hour+int(dur.Hours()) && cronHasDay(days, d) {
					covered = true
				}
			}
			if !covered {
				t.Errorf("%s %02d:00 floor %d: no window of at least %d covers it; schedule %+v", name, h, f, f, p.Schedule)
			}
		}
	}
	if ones == 0 {
		t.Fatalf("no hour with a floor: %s", out.String())
	}
	both := false
	for _, r := range p.Simulation.Policies {
		both = both || r.Policy == "queue:24,min=0,cooldown=120 + schedule"
	}
	if !both {
		t.Errorf("no \"+ schedule\" row replayed: %s", out.String())
	}
}

// cronHasDay reports whether a cron day-of-week field (N, N-M, or a
// comma list of those) holds weekday d (0 = Sunday).
func cronHasDay(field string, d int) bool {
	for _, part := range strings.Split(field, ",") {
		var a, b int
		if n, _ := fmt.Sscanf(part, "%d-%d", &a, &b); n == 2 {
			if d >= a && d <= b {
				return true
			}
		} else if n, _ := fmt.Sscanf(part, "%d", &a); n == 1 && a == d {
			return true
		}
	}
	return false
}

// TestProfileConfigTargetMaxCapsTheFloor: with --config, the schedule:
// profile prints goes under the target, so no window asks for more than
// its maxReplicaCount (1 here): the reactive policy (queue:24,min=0,
// cooldown=120, max 64) held 2 or more at the busy hours, and the block
// printed for the target had windows of 2 that serve --check-config
// refused ("desiredReplicas: 2 must be in 0..max (1)"). Now every hour's
// floor is at most 1, the windows are of 1 replica, and the printed
// block, pasted under the target, is a valid configuration.
func TestProfileConfigTargetMaxCapsTheFloor(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled history")
	}
	srv, truth := synthweektest.Serve(t, synthweek.Config{Days: 4, Scrape: 2 * time.Minute})
	target := "- name: chat\n  server: vllm\n  selector: '{namespace=\"llm\"}'\n  metrics: [{type: queue, target: 24}]\n  minReplicaCount: 0\n  maxReplicaCount: 1\n  zero: {held: 'sum(infscale_activator_held_requests)'}\n"
	cfg := filepath.Join(t.TempDir(), "serve.yaml")
	if err := os.WriteFile(cfg, []byte("prometheus: {url: "+srv.URL+"}\ntargets:\n"+target), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{"profile", "--config", cfg, "--target", "chat",
		"--start", fmt.Sprint(truth.Start.Unix()), "--end", fmt.Sprint(truth.End.Unix()), "--step", "2m",
		"--policy", "queue:24,min=0,cooldown=120", "--no-simulate"}
	var out, errb bytes.Buffer
	if code := run(context.Background(), args, nil, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	text := out.String()
	if !strings.Contains(text, "(the floor is capped at 1, the target's maxReplicaCount") {
		t.Errorf("no word of the cap:\n%s", text)
	}
	i, j := strings.Index(text, "\nschedule:\n"), strings.Index(text, "\nthe same floor as KEDA")
	if i < 0 || j < i {
		t.Fatalf("no schedule: block:\n%s", text)
	}
	block := text[i+1 : j]
	if !strings.Contains(block, "desiredReplicas: 1\n") || strings.Contains(block, "desiredReplicas: 2") {
		t.Errorf("want windows of 1 replica only:\n%s", block)
	}
	var withSchedule strings.Builder
	withSchedule.WriteString("prometheus: {url: " + srv.URL + "}\ntargets:\n" + target)
	for _, l := range strings.Split(strings.TrimRight(block, "\n"), "\n") {
		withSchedule.WriteString("  " + l + "\n")
	}
	if err := os.WriteFile(cfg, []byte(withSchedule.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	var cout, cerr bytes.Buffer
	if code := run(context.Background(), []string{"serve", "--check-config", "--config", cfg}, nil, &cout, &cerr); code != exitOK {
		t.Errorf("serve --check-config on the printed block: exit %d: %s\n%s", code, cerr.String(), withSchedule.String())
	}
}

// TestProfileTextSaysDSTDays: a window that KEDA's cron trigger and serve's
// schedule hold apart around a DST change in the coming year gets a note
// naming the change and the spans (seasonal.DSTDay), worked from the tz
// rules and robfig/cron's walk (pkg/seasonal TestWindowDSTDays has the
// steps). Europe/Berlin, from 2026-12-07: on 2027-03-28 the clock jumps
// from 02:00 CET to 03:00 CEST, so Sunday 02:00 for 4h never fires in
// KEDA, which holds the floor from the week before's end (06:00 CET) to
// the jump, where serve opens it; and Saturday 22:00 for 4h, ending at
// Sunday 02:00, never closes in KEDA, which then does not open it, where
// serve holds it to the jump; Sunday 00:00 for 6h (the change inside it)
// and a weekday window get no note. Antarctica/Troll, from 2026-10-01:
// on 2026-10-25 the clock goes back 2 h, from 03:00 +02 to 01:00 +00,
// and KEDA's trigger for Sunday 00:00 for 1h closes at 02:00 +02, an hour
// before serve closes at the end's second reading. Australia/Lord_Howe,
// from 2026-07-01: on 2026-10-04 the clock jumps 30 min, from 02:00 +1030
// to 02:30 +11, and robfig misses the whole hours after it that it looks
// for from before it: KEDA holds Sunday 20:00 for 4h from the end of the
// occurrence before (Monday 00:00) to 03:00 +11.
func TestProfileTextSaysDSTDays(t *testing.T) {
	for _, tc := range []struct {
		zone    string
		end     time.Time
		windows []seasonal.Window
		want    []string
		quiet   []string
	}{
		{"Europe/Berlin", time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC),
			[]seasonal.Window{
				{From: time.Monday, To: time.Friday, Hour: 10, Hours: 8, Min: 2, Support: 5},
				{From: time.Sunday, To: time.Sunday, Hour: 0, Hours: 6, Min: 2, Support: 3},
				{From: time.Sunday, To: time.Sunday, Hour: 2, Hours: 4, Min: 3, Support: 3},
				{From: time.Saturday, To: time.Saturday, Hour: 22, Hours: 4, Min: 3, Support: 3},
			},
			[]string{
				`note: "0 2 * * 0" for 4h in Europe/Berlin: at 2027-03-28 02:00 CET the clock jumps to 03:00 CEST: KEDA's trigger holds the floor for 164h, from 2027-03-21 06:00 CET to 2027-03-28 03:00 CEST, where serve's schedule does not (2 such change(s) in the next year;`,
				`note: "0 22 * * 6" for 4h in Europe/Berlin: at 2027-03-28 02:00 CET the clock jumps to 03:00 CEST: serve's schedule holds the floor for 4h, from 2027-03-27 22:00 CET to 2027-03-28 03:00 CEST, where KEDA's trigger does not (1 such change(s)`,
			},
			[]string{`note: "0 10 * * 1-5"`, `note: "0 0 * * 0"`}, // no change, or one inside: the same in both
		},
		{"Antarctica/Troll", time.Date(2026, 10, 1, 0, 0, 0, 0, time.UTC),
			[]seasonal.Window{{From: time.Sunday, To: time.Sunday, Hour: 0, Hours: 1, Min: 2, Support: 3}},
			[]string{`note: "0 0 * * 0" for 1h in Antarctica/Troll: at 2026-10-25 03:00 +02 the clock goes back to 01:00 +00: serve's schedule holds the floor for 1h, from 2026-10-25 02:00 +02 to 2026-10-25 01:00 +00, where KEDA's trigger does not (2 such change(s)`},
			nil,
		},
		{"Australia/Lord_Howe", time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC),
			[]seasonal.Window{{From: time.Sunday, To: time.Sunday, Hour: 20, Hours: 4, Min: 2, Support: 3}},
			[]string{`note: "0 20 * * 0" for 4h in Australia/Lord_Howe: at 2026-10-04 02:00 +1030 the clock jumps to 02:30 +11: KEDA's trigger holds the floor for 146h30m, from 2026-09-28 00:00 +1030 to 2026-10-04 03:00 +11, where serve's schedule does not (2 such change(s)`},
			nil,
		},
	} {
		loc, err := time.LoadLocation(tc.zone)
		if err != nil {
			t.Skip(err)
		}
		o := profileOut{policy: "queue:24", fraction: 0.8, zone: tc.zone, floor: seasonal.Floor{Location: loc}, end: tc.end, windows: tc.windows}
		var b bytes.Buffer
		if err := o.writeText(&b); err != nil {
			t.Fatal(err)
		}
		for _, want := range tc.want {
			if !strings.Contains(b.String(), want) {
				t.Errorf("text lacks %q:\n%s", want, b.String())
			}
		}
		for _, quiet := range tc.quiet {
			if strings.Contains(b.String(), quiet) {
				t.Errorf("a note on a window serve and KEDA read alike (%s):\n%s", quiet, b.String())
			}
		}
	}
}

// TestProfileJSONHasDSTChanges: --output json gives each window the DST
// changes its text notes come from (dst_changes: the change, the clock's
// shift, the spans where only KEDA's trigger or only serve's schedule
// holds the floor, and the text's words), every one in the year after the
// history, not only the first. Europe/Berlin, Sunday 02:00 for 1h, worked
// from the tz rules and the two rules of docs/backtest.md:
//   - a history across 2026-03-29 (the clock jumps 02:00 CET to 03:00
//     CEST), ending 2026-04-06 00:00 CEST: the year after holds
//     2026-10-25, the last Sunday of October (at 03:00 CEST the clock goes
//     back to 02:00 CET, at 01:00 UTC), and 2027-03-28 (at 02:00 CET it
//     jumps to 03:00 CEST, at 01:00 UTC). On 2026-10-25 02:00 is read
//     twice: serve opens at the first reading (02:00 CEST, 00:00 UTC),
//     KEDA at the reading time.Date picks, the second (02:00 CET, 01:00
//     UTC); both close at 03:00 CET, which is read once: serve alone holds
//     the floor for 1h. On 2027-03-28 02:00 is skipped: serve opens at the
//     jump and closes at 03:00 CEST, the same instant, so not at all;
//     KEDA's start never fires, so after the week before's end (2027-03-21
//     03:00 CET) its next end (2027-03-28 03:00 CEST) comes before its
//     next start and it holds the floor until then: 7 × 24 h - 1 h = 167h.
//   - a history across 2026-10-25 itself, ending 2026-10-27 00:00 CET
//     (23:00 UTC the day before): the year after holds 2027-03-28 (the
//     same 167h) and not 2027-10-31, the next last Sunday of October, five
//     days past the year.
//
// A weekday window no change touches has an empty list; the text's note
// is the first change's.
func TestProfileJSONHasDSTChanges(t *testing.T) {
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip(err)
	}
	// Times as the JSON writes them, RFC 3339 with the zone's offset then;
	// the change is its first instant, on the new offset.
	type span struct{ From, To, Duration string }
	type change struct {
		Change, Shift       string
		KEDAOnly, ServeOnly []span
		Note                string
	}
	fall := change{Change: "2026-10-25T02:00:00+01:00", Shift: "-1h",
		ServeOnly: []span{{"2026-10-25T02:00:00+02:00", "2026-10-25T02:00:00+01:00", "1h"}},
		Note:      "at 2026-10-25 03:00 CEST the clock goes back to 02:00 CET: serve's schedule holds the floor for 1h, from 2026-10-25 02:00 CEST to 2026-10-25 02:00 CET, where KEDA's trigger does not"}
	spring := change{Change: "2027-03-28T03:00:00+02:00", Shift: "1h",
		KEDAOnly: []span{{"2027-03-21T03:00:00+01:00", "2027-03-28T03:00:00+02:00", "167h"}},
		Note:     "at 2027-03-28 02:00 CET the clock jumps to 03:00 CEST: KEDA's trigger holds the floor for 167h, from 2027-03-21 03:00 CET to 2027-03-28 03:00 CEST, where serve's schedule does not"}
	cet, cest := time.FixedZone("CET", 3600), time.FixedZone("CEST", 7200)
	for _, tc := range []struct {
		start, end time.Time
		want       []change
	}{
		{time.Date(2026, 3, 23, 0, 0, 0, 0, cet), time.Date(2026, 4, 6, 0, 0, 0, 0, cest), []change{fall, spring}},
		{time.Date(2026, 10, 19, 0, 0, 0, 0, cest), time.Date(2026, 10, 27, 0, 0, 0, 0, cet), []change{spring}},
	} {
		o := profileOut{policy: "queue:24", fraction: 0.8, zone: "Europe/Berlin", floor: seasonal.Floor{Location: loc},
			start: tc.start, end: tc.end, windows: []seasonal.Window{
				{From: time.Sunday, To: time.Sunday, Hour: 2, Hours: 1, Min: 2, Support: 3},
				{From: time.Monday, To: time.Friday, Hour: 10, Hours: 8, Min: 2, Support: 5},
			}}
		var b bytes.Buffer
		if err := o.writeJSON(&b); err != nil {
			t.Fatal(err)
		}
		var got struct {
			Schedule []struct {
				Cron       string `json:"cron"`
				DSTChanges []struct {
					Change    string `json:"change"`
					Shift     string `json:"shift"`
					KEDAOnly  []span `json:"keda_only"`
					ServeOnly []span `json:"serve_only"`
					Note      string `json:"note"`
				} `json:"dst_changes"`
			} `json:"schedule"`
		}
		if err := json.Unmarshal(b.Bytes(), &got); err != nil {
			t.Fatalf("%v\n%s", err, b.String())
		}
		if len(got.Schedule) != 2 {
			t.Fatalf("history to %s: schedule %+v; want the two windows", tc.end, got.Schedule)
		}
		w := got.Schedule[0]
		var changes []change
		for _, c := range w.DSTChanges {
			if c.KEDAOnly == nil || c.ServeOnly == nil {
				t.Errorf("history to %s: %+v: want keda_only and serve_only as lists, [] when empty", tc.end, c)
			}
			changes = append(changes, change{c.Change, c.Shift, nilIfEmpty(c.KEDAOnly), nilIfEmpty(c.ServeOnly), c.Note})
		}
		if w.Cron != "0 2 * * 0" || !reflect.DeepEqual(changes, tc.want) {
			t.Errorf("history to %s: %q dst_changes\n%+v\nwant\n%+v", tc.end, w.Cron, changes, tc.want)
		}
		if w := got.Schedule[1]; w.DSTChanges == nil || len(w.DSTChanges) != 0 {
			t.Errorf("history to %s: %q dst_changes %+v; want []", tc.end, w.Cron, w.DSTChanges)
		}
		b.Reset()
		if err := o.writeText(&b); err != nil {
			t.Fatal(err)
		}
		if note := fmt.Sprintf("note: \"0 2 * * 0\" for 1h in Europe/Berlin: %s (%d such change(s) in the next year;", tc.want[0].Note, len(tc.want)); !strings.Contains(b.String(), note) {
			t.Errorf("history to %s: text lacks %q:\n%s", tc.end, note, b.String())
		}
	}
}

// nilIfEmpty is s, nil when empty.
func nilIfEmpty[T any](s []T) []T {
	if len(s) == 0 {
		return nil
	}
	return s
}
