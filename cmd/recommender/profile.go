package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/infscale/infscale/internal/status"
	"github.com/infscale/infscale/pkg/backtest"
	"github.com/infscale/infscale/pkg/replay"
	"github.com/infscale/infscale/pkg/seasonal"
)

// ProfileCmd is `infscale profile`: the arrival rate by hour of day and day
// of week from Prometheus history, how much of the variance it explains, a
// proposed schedule floor (a share of the replicas the reactive policy held
// in a replay of the history, as config `schedule:` YAML and KEDA cron
// triggers), and a replay of reactive only / schedule only / both.
type ProfileCmd struct {
	PrometheusRangeFlags `embed:"" set:"configuse=; the reactive policy is --policy, not the target's"`
	ReplicaFlags         `embed:""`

	Policy        string        `short:"p" default:"queue:24" placeholder:"P" help:"The reactive policy (a simulate policy string); it is replayed on the history and the floor is a share of the replicas it held at each weekday and hour (default ${default})."`
	FloorFraction float64       `name:"floor-fraction" default:"0.8" placeholder:"F" help:"The floor covers this fraction of the replicas the reactive policy held (0 < F <= 1); the policy scales on the rest (default ${default})."`
	Timezone      string        `default:"UTC" placeholder:"TZ" help:"IANA time zone of the hours and of the schedule, e.g. Europe/Berlin (not Local, the machine's) (default ${default})."`
	Simulate      bool          `default:"true" negatable:"" help:"Print the replay of reactive only, and of schedule only and both when there is a schedule (--no-simulate: print no replay; the reactive policy is still replayed, the floor comes from it)."`
	SLOTTFT       time.Duration `name:"slo-ttft" default:"2s" placeholder:"D" help:"TTFT SLO of the replay (default ${default})."`
	Seed          uint64        `default:"1" help:"Seed of the replay's arrivals within a step and token draws."`
	Output        string        `short:"o" enum:"text,json" default:"text" help:"Output format: text or json."`
}

// Run fetches, profiles, proposes the floor and replays.
func (c *ProfileCmd) Run(e *env) error {
	// "Local" is this machine's zone, not the cluster's: serve's schedule:
	// refuses it (pkg/recommend), so it is no zone to propose one in.
	if c.Timezone == "Local" {
		return invalidf("--timezone %q is the machine's zone (UTC in most containers): name an IANA zone, e.g. Europe/Berlin or UTC", c.Timezone)
	}
	loc, err := time.LoadLocation(c.Timezone)
	if err != nil {
		return invalidf("--timezone %q is not an IANA time zone: %v (want a name from the tz database, e.g. Europe/Berlin, America/New_York or UTC)", c.Timezone, err)
	}
	// Steps are grouped into clock hours: a longer step fills only some,
	// and one that does not divide an hour mixes neighbouring hours.
	if c.Step > time.Hour {
		return invalidf("--step %s: profile groups the steps into clock hours: want at most 1h (e.g. 30s, 5m)", c.Step)
	}
	// Below 1s the range's own check says so (as backtest's).
	if err := seasonal.CheckStep(c.Step, time.UTC, time.Time{}, time.Time{}); c.Step >= time.Second && err != nil {
		return invalidf("--step %s: profile groups the steps into clock hours; %v", c.Step, err)
	}
	c.Policy = policySpec(c.Policy)
	reactive, err := replay.ParsePolicy(c.Policy)
	if err != nil {
		return invalidf("--policy: %v", err)
	}
	// The floor joins the reactive policy as schedule= options: only an
	// infscale policy takes them (recommended is written out for the
	// replica below).
	base := c.Policy
	if reactive.Recommend == nil || strings.HasPrefix(base, "hpa(") {
		return invalidf("--policy %q: profile adds the floor to a reactive infscale policy as schedule= options: want SIGNAL:TARGET[,OPTION=VALUE...] or recommended, not a baseline or hpa(...)", c.Policy)
	}
	if !(c.FloorFraction > 0 && c.FloorFraction <= 1) {
		return invalidf("--floor-fraction %g: want 0 < F <= 1", c.FloorFraction)
	}
	if c.SLOTTFT <= 0 {
		return invalidf("--slo-ttft %s: want > 0", c.SLOTTFT)
	}
	if err := sloTTFTAtMost(c.SLOTTFT); err != nil {
		return err
	}
	res, err := c.resolve(e.given, e.stderr)
	if err != nil {
		return err
	}
	if pt := res.pair; pt != nil {
		return invalidf("--target %s: %s's target %s is a prefill/decode pair (roles:): profile proposes a schedule: floor for one pool, and a pair takes none (each role has its minReplicaCount); profile one pool with --prometheus-url and that role's --selector, or replay the pair's history with `infscale backtest --config %s --target %s` (docs/llm-d.md)", pt.name, c.PrometheusRangeFlags.Config, pt.name, c.PrometheusRangeFlags.Config, pt.name)
	}
	res.warn(e.stderr)
	if span := res.grid.End().Sub(res.grid.Start); span < 24*time.Hour {
		return invalidf("--start..--end spans %s: a profile needs at least 24h (a week to see weekdays; --start=-7d)", span)
	}
	// The zone's offsets over the range: a half-hour zone splits 1h steps.
	if err := seasonal.CheckStep(c.Step, loc, res.grid.Start, res.grid.End()); err != nil {
		return invalidf("--step %s with --timezone %s: %v", c.Step, c.Timezone, err)
	}
	c.fromTarget(res.replica, true)
	model, err := c.Replica()
	if err != nil {
		return err
	}
	if base == "recommended" {
		// Its lookahead, hold and ramp bound are the replica's, its guards
		// the SLO's (replay.Recommended alone has no hold or ramp bound).
		base = replay.RecommendedFor(model.ColdStart(), c.SLOTTFT.Seconds())
	}
	prog := status.New(e.stderr)
	h, st, err := backtest.Fetch(e.ctx, res.api, res.target, res.grid, func(done, total int) {
		prog.Printf("profile: queries %d/%d", done, total)
	})
	prog.Done()
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	w, err := backtest.Reconstruct(h, backtest.Options{GapThreshold: c.MaxGap})
	if err != nil {
		return res.reconstructError(e.ctx, "profile", err, st.Queried)
	}
	// The range may have shrunk to the data (less retention than asked, a
	// new target): the hours are the data's, so every step from here on is
	// w.Grid's, not the asked range's.
	g := w.Grid
	p, err := seasonal.Build(g.Start, g.Step, w.Arrivals, w.Known(), loc)
	if errors.Is(err, seasonal.ErrTooShort) {
		return fmt.Errorf("profile: %w; %s", err, dataCovers(w))
	}
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	// The floor is a share of the replicas the reactive policy itself held
	// at each hour of the week in a replay of this history: what the policy
	// will ask for anyway, raised before the load comes. (A per-replica
	// throughput from the replica model alone, Little's law at the policy's
	// target, read a queue:24 replica as 11 req/s where the replay holds
	// about 3, and proposed no floor on a week built around a daily cycle.)
	var notes strings.Builder // the memory budget's, said after each progress line
	rcfg := func(label string) backtest.Config {
		return backtest.Config{Seed: c.Seed, GPUs: float64(model.Config().TP), Replay: replay.Config{
			Model: model, SLOTTFT: c.SLOTTFT.Seconds(),
			Progress: func(now, end float64) {
				if end > 0 && !math.IsInf(end, 0) {
					prog.Printf("profile: %s %3.0f%%", label, 100*now/end)
				}
			},
			Size: replaySizer(&notes),
		}}
	}
	reactive.Name = c.Policy + " (reactive only)"
	cfg := rcfg("replay of the reactive policy")
	cfg.Policies = []replay.Policy{reactive}
	rep, err := backtest.Run(e.ctx, w, cfg)
	prog.Done()
	fmt.Fprint(e.stderr, notes.String())
	notes.Reset()
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	for _, r := range rep.Policies {
		warnShed(e.stderr, r.Result)
	}
	if w := rep.SLOWarning(); w != "" { // the later replays replay the same requests
		fmt.Fprintf(e.stderr, "warning: %s\n", w)
	}
	rep.Fetch = st
	held, known := heldReplicaSeconds(rep.Policies[0].Timeline, g.Step.Seconds(), g.N, w.Known())
	hp, err := seasonal.Build(g.Start, g.Step, held, known, loc)
	if err != nil {
		return fmt.Errorf("profile: the reactive replay's replicas: %w", err)
	}
	fl, err := seasonal.ProposeFloor(hp, 1, c.FloorFraction)
	if err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	// Floors at or below the policy's minimum are left out: for one that
	// scales to zero (min=0), a floor of 1 keeps a replica warm through
	// the hours it is busy, which is no cold start for their requests.
	minReplicas := reactive.Recommend.Min
	// A window above max is not a valid schedule: the policy's, and with
	// --config the target's maxReplicaCount, whose schedule: it is printed
	// for (serve --check-config refused "desiredReplicas: 2 must be in
	// 0..max (1)" on the block profile printed for it).
	maxReplicas, targetMax := reactive.Recommend.Max, 0
	if res.policy != nil && res.policy.Recommend != nil && res.policy.Recommend.Max < maxReplicas {
		maxReplicas, targetMax = res.policy.Recommend.Max, res.policy.Recommend.Max
	}
	fl.Cap(maxReplicas)
	wins := fl.Windows(minReplicas)
	out := profileOut{p: p, held: hp, floor: fl, windows: wins, zone: c.Timezone,
		policy: c.Policy, fraction: c.FloorFraction, coverage: w.Coverage, start: g.Start, end: g.End(), targetMax: targetMax}
	if c.Simulate {
		if len(wins) > 0 {
			tl := fl.Timeline(g.Start, g.Step, g.N+1)
			for i := range tl {
				tl[i] = max(tl[i], float64(minReplicas)) // never below the policy's minimum
			}
			sched, err := replay.Follow(ScheduleOnlyRow, g.Step.Seconds(), tl)
			if err != nil {
				return err
			}
			both, err := replay.ParsePolicy(base + seasonal.PolicyOptions(wins, c.Timezone))
			if err != nil {
				return fmt.Errorf("profile: schedule as policy options: %w", err)
			}
			both.Name = c.Policy + " + schedule"
			cfg := rcfg("replay of the schedule")
			cfg.Policies = []replay.Policy{sched, both}
			// The actual timeline was replayed with the reactive policy:
			// not again; savings against it as backtest.Run computes them.
			w2 := w
			w2.Replicas = nil
			more, err := backtest.Run(e.ctx, w2, cfg)
			prog.Done()
			fmt.Fprint(e.stderr, notes.String())
			if err != nil {
				return fmt.Errorf("profile: %w", err)
			}
			for _, r := range more.Policies {
				warnShed(e.stderr, r.Result)
				if am := rep.Actual.ReplicaMinutes; am > 0 {
					r.SavingsPct = 100 * (am - r.ReplicaMinutes()) / am
				}
				rep.Policies = append(rep.Policies, r)
			}
			rep.ReplayTime += more.ReplayTime
		}
		out.sim = &rep
	}
	if c.Output == "json" {
		return out.writeJSON(e.stdout)
	}
	return out.writeText(e.stdout)
}

type profileOut struct {
	p       seasonal.Profile
	floor   seasonal.Floor
	windows []seasonal.Window
	zone    string
	// held is the profile of the replicas the reactive policy held in its
	// replay (Rate: mean replicas per weekday and hour).
	held       seasonal.Profile
	policy     string
	fraction   float64
	coverage   backtest.Coverage
	start, end time.Time
	sim        *backtest.Report
	// targetMax is the --config target's maxReplicaCount when it, below
	// the policy's max, capped the floor (0: not so).
	targetMax int
}

var dayNames = [7]string{"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"}

func rate(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.2f", v)
}

func (o profileOut) writeText(w io.Writer) error {
	p := o.p
	fmt.Fprintf(w, "history   %s .. %s: %.1f days of data (coverage %.1f%%), hours in %s\n",
		o.start.Format(time.RFC3339), o.end.Format(time.RFC3339), p.Days, 100*o.coverage.Fraction, o.zone)
	if r := o.coverage.Requested; r != nil {
		fmt.Fprintf(w, "  range   asked %s .. %s; the data covers only the range above\n", r.From.Format(time.RFC3339), r.To.Format(time.RFC3339))
	}
	// A weekday without data has no rate and no floor (Profile.Expected is
	// NaN there); an hour missing from a day with data is estimated.
	var none []string
	for _, d := range []int{1, 2, 3, 4, 5, 6, 0} {
		if math.IsNaN(p.DayOfWeek[d]) {
			none = append(none, dayNames[d])
		}
	}
	if len(none) > 0 {
		fmt.Fprintf(w, "note      no data on %s: no rate and no floor there (a week of history covers every weekday)\n", strings.Join(none, ", "))
	}
	fmt.Fprintln(w, "\narrival rate (requests/s) by hour of day and day of week:")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "hour\t")
	order := []int{1, 2, 3, 4, 5, 6, 0}
	for _, d := range order {
		fmt.Fprintf(tw, "%s\t", dayNames[d])
	}
	fmt.Fprintln(tw, "all\tfloor Mon\tfloor Sat\t")
	for h := range 24 {
		fmt.Fprintf(tw, "%02d\t", h)
		for _, d := range order {
			fmt.Fprintf(tw, "%s\t", rate(p.Rate[d][h]))
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t\n", rate(p.HourOfDay[h]), o.floor.Min[1][h], o.floor.Min[6][h])
	}
	fmt.Fprint(tw, "all\t")
	for _, d := range order {
		fmt.Fprintf(tw, "%s\t", rate(p.DayOfWeek[d]))
	}
	fmt.Fprintf(tw, "%s\t\t\t\n", rate(p.Mean))
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\npeak hour %02d:00 (%.2f req/s); weekend / weekday %s; variance explained by day x hour: %s\n",
		p.PeakHour, p.HourOfDay[p.PeakHour], fmtPct(p.WeekendRatio), fmtPct(p.VarianceExplained))
	pk := p.PeakHour
	fmt.Fprintf(w, "replayed, %s held %.1f replicas on average at %02d:00 (%.2f req/s per replica); floor = floor(%.2f x the replicas it held at that weekday and hour)\n",
		o.policy, o.held.HourOfDay[pk], pk, o.perReplica(), o.fraction)
	fmt.Fprintf(w, "\nwindows that recur (the same hour on >= %d days, or the same weekday and hour in >= %d weeks):\n",
		seasonal.MinDays, seasonal.MinWeeks)
	if o.targetMax > 0 {
		fmt.Fprintf(w, "  (the floor is capped at %d, the target's maxReplicaCount: serve refuses a window above it)\n", o.targetMax)
	}
	if len(o.windows) == 0 {
		fmt.Fprintln(w, "  none: no hour needs more than the policy's min on enough days")
	}
	for _, x := range o.windows {
		fmt.Fprintf(w, "  %-16s for %2dh at %d replicas: %d occurrences support it\n", x.Cron(), x.Hours, x.Min, x.Support)
	}
	fmt.Fprintf(w, "\nproposed schedule floor (the target's `schedule:` in serve's config):\n")
	seasonal.WriteScheduleYAML(w, o.windows, o.zone)
	fmt.Fprintf(w, "\nthe same floor as KEDA cron triggers (beside the prometheus trigger; KEDA takes the largest):\n")
	seasonal.WriteKEDACron(w, o.windows, o.zone)
	// The two agree but around a DST change that moves a window's start or
	// end for one of them (seasonal.DSTDay): say the next.
	dst, err := o.dstDays()
	if err != nil {
		return err
	}
	for i, x := range o.windows {
		if days := dst[i]; len(days) > 0 {
			fmt.Fprintf(w, "note: %q for %dh in %s: %s (%d such change(s) in the next year; docs/config.md#targetsschedule)\n", x.Cron(), x.Hours, o.zone, dstNote(days[0]), len(days))
		}
	}
	if o.sim != nil {
		if len(o.windows) == 0 {
			// No window: "schedule only" would be the policy's min throughout
			// and "both" the reactive policy itself.
			fmt.Fprintf(w, "\nreactive only, replayed on the same history; no schedule to add to the reactive policy, so no \"schedule only\" or \"both\" row:\n\n")
		} else {
			fmt.Fprintf(w, "\nreactive only, schedule only, both, replayed on the same history:\n\n")
		}
		if err := o.sim.WriteText(w); err != nil {
			return err
		}
		if ps := o.sim.Policies; len(o.windows) > 0 && len(ps) == 3 && ps[2].ReplicaSeconds == ps[0].ReplicaSeconds && ps[2].Misses() == ps[0].Misses() {
			fmt.Fprintf(w, "%s + schedule: the same as reactive only: the policy already held at least the floor at every hour of it, so the schedule changes nothing on this history; a higher --floor-fraction raises the floor.\n", o.policy)
		}
		if len(o.windows) > 0 {
			fmt.Fprintf(w, "%s: the floor alone, with no reactive scaling: it covers %.0f%% of what the policy held by design, so its misses are expected; it shows what the floor adds under the policy, not a policy to run.\n",
				ScheduleOnlyRow, 100*o.fraction)
		}
	}
	return nil
}

// dstDays is, per window (o.windows' order), the DST changes in the year
// after the history around which KEDA's cron trigger and serve's schedule
// hold its floor apart (seasonal.Window.DSTDays; none for most). Errors:
// DSTDays'.
func (o profileOut) dstDays() ([][]seasonal.DSTDay, error) {
	out := make([][]seasonal.DSTDay, len(o.windows))
	for i, x := range o.windows {
		days, err := x.DSTDays(o.floor.Location, o.end)
		if err != nil {
			return nil, err
		}
		out[i] = days
	}
	return out, nil
}

// ScheduleOnlyRow labels profile's replay of the floor alone.
const ScheduleOnlyRow = "schedule only (floor alone)"

// perReplica is the arrival rate per replica the reactive replay held at
// the peak hour (requests/s; NaN without data).
func (o profileOut) perReplica() float64 {
	pk := o.p.PeakHour
	return o.p.HourOfDay[pk] / o.held.HourOfDay[pk]
}

// heldReplicaSeconds turns a replay's timeline (one Sample per period, T in
// seconds from the grid's start) into replica-seconds per grid step: step
// j (1..n, ending at j·step) holds the mean Desired of the samples in it ×
// step, the last earlier sample's when none fell in it. known is the
// history's known steps less those before the first sample.
func heldReplicaSeconds(tl []replay.Sample, step float64, n int, history []bool) (held []float64, known []bool) {
	held, known = make([]float64, n+1), make([]bool, n+1)
	k, last := 0, math.NaN()
	for j := 1; j <= n; j++ {
		var sum float64
		cnt := 0
		for ; k < len(tl) && tl[k].T <= float64(j)*step; k++ {
			sum += float64(tl[k].Desired)
			cnt++
		}
		if cnt > 0 {
			last = sum / float64(cnt)
		}
		if !math.IsNaN(last) {
			held[j] = last * step
			known[j] = j >= len(history) || history[j]
		}
	}
	return held, known
}

func fmtPct(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*v)
}

func (o profileOut) writeJSON(w io.Writer) error {
	nz := func(v float64) any {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		return v
	}
	p := o.p
	rates := map[string][]any{}
	floors := map[string][]int{}
	for d := range 7 {
		for h := range 24 {
			rates[dayNames[d]] = append(rates[dayNames[d]], nz(p.Rate[d][h]))
		}
		floors[dayNames[d]] = o.floor.Min[d][:]
	}
	hod := make([]any, 24)
	for h := range hod {
		hod[h] = nz(p.HourOfDay[h])
	}
	dow := map[string]any{}
	for d := range 7 {
		dow[dayNames[d]] = nz(p.DayOfWeek[d])
	}
	// A span's ends carry the zone's offset (RFC 3339), which a change
	// moves: duration is its length.
	type span struct {
		From     time.Time `json:"from"`
		To       time.Time `json:"to"`
		Duration string    `json:"duration"`
	}
	spans := func(ss []seasonal.Span) []span {
		out := []span{}
		for _, x := range ss {
			out = append(out, span{x.From, x.To, shortDuration(x.To.Sub(x.From))})
		}
		return out
	}
	// dstChange is the text's note on one change (seasonal.DSTDay).
	type dstChange struct {
		Change    time.Time `json:"change"`
		Shift     string    `json:"shift"`
		KEDAOnly  []span    `json:"keda_only"`
		ServeOnly []span    `json:"serve_only"`
		Note      string    `json:"note"`
	}
	type win struct {
		Cron       string      `json:"cron"`
		Duration   string      `json:"duration"`
		Min        int         `json:"min"`
		EndCron    string      `json:"end_cron"`
		Timezone   string      `json:"timezone"`
		Support    int         `json:"support"`
		DSTChanges []dstChange `json:"dst_changes"`
	}
	dst, err := o.dstDays()
	if err != nil {
		return err
	}
	wins := []win{}
	for i, x := range o.windows {
		changes := []dstChange{}
		for _, d := range dst[i] {
			changes = append(changes, dstChange{d.Change, shortDuration(d.Shift), spans(d.KEDAOnly), spans(d.ServeOnly), dstNote(d)})
		}
		wins = append(wins, win{x.Cron(), fmt.Sprintf("%dh", x.Hours), x.Min, x.EndCron(), o.zone, x.Support, changes})
	}
	out := map[string]any{
		"start": o.start, "end": o.end, "days": p.Days, "timezone": o.zone,
		"rate_by_day_hour": rates, "hour_of_day": hod, "day_of_week": dow, "mean_rate": nz(p.Mean),
		"peak_hour": p.PeakHour, "weekend_ratio": nz(p.WeekendRatio), "variance_explained": nz(p.VarianceExplained),
		"per_replica_rate": nz(o.perReplica()), "floor": floors, "schedule": wins,
	}
	if o.sim != nil {
		var buf bytes.Buffer
		if err := o.sim.WriteJSON(&buf); err != nil {
			return err
		}
		out["simulation"] = json.RawMessage(buf.Bytes())
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// dataCovers says what w's history covers and what to give instead, for a
// profile refused as too short: the span the data covers (the range shrunk
// to it, with the range asked when that differs), its time in gaps, and an
// earlier --start. Before, "less than 24 hours of data" alone left a user
// who asked --start=-1d on data that ended an hour ago guessing.
func dataCovers(w backtest.Workload) string {
	g := w.Grid
	span := g.End().Sub(g.Start)
	msg := fmt.Sprintf("the data covers %s (%s .. %s", span.Round(time.Second), g.Start.UTC().Format(time.RFC3339), g.End().UTC().Format(time.RFC3339))
	if r := w.Coverage.Requested; r != nil {
		msg += fmt.Sprintf(" of the asked %s .. %s", r.From.UTC().Format(time.RFC3339), r.To.UTC().Format(time.RFC3339))
	}
	msg += ")"
	if f := w.Coverage.Fraction; f < 1 {
		msg += fmt.Sprintf(", %s of it in gaps", time.Duration((1-f)*float64(span)).Round(time.Second))
	}
	var gauge time.Duration
	for _, gp := range w.Coverage.GaugeGaps {
		gauge += gp.Duration()
	}
	advice := ": give an earlier --start"
	if gauge > 0 {
		// Not the range's fault alone: an earlier --start may have the
		// same gaps.
		msg += fmt.Sprintf(", %s of it with no running/waiting samples though the success counter had some (backtest's gauge_gaps)", gauge.Round(time.Second))
		advice = ": check that the server's running gauge is scraped under the selector (--server); or give an earlier --start"
	}
	return msg + advice + " (--start=-8d for a week) where Prometheus keeps that much, or wait for the target's series to span a day"
}

// dstNote says what a DST change does to the clock and where KEDA's cron
// trigger and serve's schedule then hold a window's floor apart:
// "at 2027-03-28 02:00 CET the clock jumps to 03:00 CEST: KEDA's trigger
// holds the floor for 164h, from 2027-03-21 06:00 CET to 2027-03-28 03:00
// CEST, where serve's schedule does not". The span's length is said beside
// its wall-clock ends, which a change moves: 02:00 +02 to 01:00 +00 is 1h.
func dstNote(d seasonal.DSTDay) string {
	const at = "2006-01-02 15:04 MST"
	before, off := d.Change.Add(-time.Nanosecond).Zone()
	moves := "jumps to"
	if d.Shift < 0 {
		moves = "goes back to"
	}
	text := fmt.Sprintf("at %s the clock %s %s", d.Change.In(time.FixedZone(before, off)).Format(at), moves, d.Change.Format("15:04 MST"))
	var parts []string
	for _, s := range d.KEDAOnly {
		parts = append(parts, fmt.Sprintf("KEDA's trigger holds the floor for %s, from %s to %s, where serve's schedule does not", shortDuration(s.To.Sub(s.From)), s.From.Format(at), s.To.Format(at)))
	}
	for _, s := range d.ServeOnly {
		parts = append(parts, fmt.Sprintf("serve's schedule holds the floor for %s, from %s to %s, where KEDA's trigger does not", shortDuration(s.To.Sub(s.From)), s.From.Format(at), s.To.Format(at)))
	}
	return text + ": " + strings.Join(parts, "; ")
}
