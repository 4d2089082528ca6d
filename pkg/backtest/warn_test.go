package backtest

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/replay"
)

// dayReport is a day at 10 req/s for 12 h then 20 req/s, in 60 s steps:
// the hourly rate moves once, by 10 req/s.
func dayReport(rows ...Row) Report {
	rate := make([]float64, 24*60+1)
	for j := 1; j < len(rate); j++ {
		rate[j] = 10
		if j > 12*60 {
			rate[j] = 20
		}
	}
	return Report{Step: time.Minute, ArrivalRate: rate, Policies: rows}
}

// TestRunawayScaleEvents: a policy averaging 5 requests per replica-second
// (1,296,000 requests over 259,200 replica-seconds) needs 10 / 5 = 2 unit
// steps for the day's one swing of 10 req/s, plus one up-and-down pair an
// hour for noise: 2 + 2 × 24 = 50 explained events. Twice that, 100, is
// allowed; 101 warns, naming the events, the hourly rate and the reversals.
func TestRunawayScaleEvents(t *testing.T) {
	row := func(events int) Row {
		return Row{Result: replay.Result{Policy: "queue:24", Requests: 1296000, ReplicaSeconds: 259200, Peak: 6, ScaleEvents: events, Reversals: 40}, Max: 100}
	}
	if got := ExplainedEvents(dayReport().ArrivalRate, 60, 5); math.Abs(got-50) > 1e-9 {
		t.Errorf("explained events %g, want 50", got)
	}
	if w := dayReport(row(100)).Runaway(); len(w) != 0 {
		t.Errorf("100 events: warnings %q, want none", w)
	}
	w := dayReport(row(101)).Runaway()
	if len(w) != 1 || !strings.Contains(w[0], "queue:24: 101 scale events (4.2 an hour, 40 reversals) where the traffic explains about 50") {
		t.Errorf("101 events: warnings %q", w)
	}
}

// TestRunawayPeakAtMax: a policy whose peak reached its max is named; one
// below its max, and fixed:N (no max: replay.MaxReplicas), are not.
func TestRunawayPeakAtMax(t *testing.T) {
	rows := []Row{
		{Result: replay.Result{Policy: "queue:24,lookahead=90", Peak: 100}, Max: 100},
		{Result: replay.Result{Policy: "queue:24", Peak: 99}, Max: 100},
		{Result: replay.Result{Policy: "fixed:8", Peak: 8}, Max: replay.MaxReplicas},
	}
	w := dayReport(rows...).Runaway()
	if len(w) != 1 || !strings.HasPrefix(w[0], "queue:24,lookahead=90: peaked at its max, 100 replicas") {
		t.Errorf("warnings %q, want one for queue:24,lookahead=90", w)
	}
	if p, err := replay.ParsePolicy("queue:24"); err != nil || p.Max() != 100 {
		t.Errorf("queue:24's max %d (%v), want recommend.DefaultMax 100", p.Max(), err)
	}
	if p, err := replay.ParsePolicy("fixed:8"); err != nil || p.Max() != replay.MaxReplicas {
		t.Errorf("fixed:8's max %d (%v), want replay.MaxReplicas", p.Max(), err)
	}
}

// TestFidelityVerdict: the grade is the better of the median relative
// error (good <= 25%, fair <= 50%) and the mean |error| as a share of the
// SLO (good <= 5%, fair <= 25%); each grade says what to do.
func TestFidelityVerdict(t *testing.T) {
	for _, c := range []struct {
		rel, abs, slo float64
		want, advice  string
	}{
		{0.20, 1.0, 2, "good", "can be trusted"},
		{0.30, 0.05, 2, "good", "can be trusted"},        // 2.5% of the SLO
		{0.53, 0.12, 2, "fair", "--calibrate FILE"},      // 6% of the SLO
		{0.45, 0.9, 2, "fair", "--calibrate FILE"},       // 45%
		{0.60, 0.6, 2, "poor", "--model-config FILE"},    // 60%, 30% of the SLO
		{math.NaN(), 0.6, 2, "poor", "--calibrate FILE"}, // no relative error
	} {
		grade, advice := Fidelity{MedianRelError: c.rel, MeanAbsErrorS: c.abs}.Verdict(c.slo)
		if grade != c.want || !strings.Contains(advice, c.advice) {
			t.Errorf("rel %g, abs %g s, SLO %g s: %s (%s), want %s mentioning %q", c.rel, c.abs, c.slo, grade, advice, c.want, c.advice)
		}
	}
}

// TestWriteTextWarnsAndExplains: the text report carries the runaway
// warning, the fidelity grade with its advice, and the legend lines of the
// reference rows present.
func TestWriteTextWarnsAndExplains(t *testing.T) {
	rep := dayReport(
		Row{Result: replay.Result{Policy: "queue:24,lookahead=90", Peak: 100}, Max: 100, SavingsPct: math.NaN()},
		Row{Result: replay.Result{Policy: "oracle", Peak: 8}, Max: replay.MaxReplicas, SavingsPct: math.NaN()},
	)
	rep.SLOTTFT = 2
	rep.Fidelity = &Fidelity{Hours: 24, MeanAbsErrorS: 0.6, MedianRelError: 0.6}
	var b strings.Builder
	if err := rep.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"warning   queue:24,lookahead=90: peaked at its max, 100 replicas",
		"median relative error 60%: poor (",
		"\noracle: reads the arrivals ahead",
		"replica-min: replicas x minutes",
	} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
	if strings.Contains(b.String(), "\nrecommended:") {
		t.Errorf("a legend line for recommended without its row:\n%s", b.String())
	}
}

// TestZeroActualWarns: a replicas query reading 0 at every step while
// requests completed (the wrong workload, a Deployment scaled to 0 beside
// the one serving) printed an actual row of 0 replica-minutes whose replay
// missed every request, without a word; it is a warning naming it, in
// text and JSON. A range with no request and 0 replicas (a target at zero)
// is not.
func TestZeroActualWarns(t *testing.T) {
	sim := replay.Result{Policy: ActualPolicy, Requests: 29053}
	rep := dayReport()
	rep.Requests, rep.Actual = 29053, Actual{ReplicaMinutes: 0, Peak: 0, Simulated: &sim, TTFTP95: math.NaN(), MissPct: math.NaN(), MissPctLow: math.NaN(), MissPctHigh: math.NaN()}
	want := "the replicas query reads 0 at every step while 29053 requests completed: the actual rows replay no replica (every request missed) and vs actual is unknown; check that it counts the replicas of the workload --selector matches"
	var text, js strings.Builder
	if err := rep.WriteText(&text); err != nil || !strings.Contains(text.String(), "warning   "+want+"\n") {
		t.Errorf("text (%v) lacks the warning %q:\n%s", err, want, text.String())
	}
	if err := rep.WriteJSON(&js); err != nil || !strings.Contains(js.String(), want) {
		t.Errorf("JSON (%v) lacks the warning %q:\n%s", err, want, js.String())
	}
	rep.Requests = 0
	text.Reset()
	if err := rep.WriteText(&text); err != nil || strings.Contains(text.String(), "reads 0 at every step") {
		t.Errorf("no request: warned anyway (%v):\n%s", err, text.String())
	}
}

// TestRunawayShortHistory: 7.5 minutes of history (15 steps of 30 s) at a
// flat 10 req/s, as a Prometheus scraping a fleet for a few minutes holds.
// The traffic's swings explain no event and the noise allowance was one
// pair an hour, 2 x 0.125 = 0.25 events: a policy's one step from the 2
// replicas that ran down to the 1 it needs was "more than 2x" and warned
// as scaling on noise (recommended, oracle and optimal alike). A span
// under an hour now counts as one: 2 events explained, 4 allowed; 5 (a
// lookahead policy climbing to 6 replicas and back) still warns.
func TestRunawayShortHistory(t *testing.T) {
	rate := make([]float64, 16)
	for j := range rate {
		rate[j] = 10
	}
	if got := ExplainedEvents(rate, 30, 5); math.Abs(got-2) > 1e-9 {
		t.Errorf("explained events %g, want 2", got)
	}
	row := func(policy string, events int) Row {
		return Row{Result: replay.Result{Policy: policy, Requests: 4500, ReplicaSeconds: 900, Peak: 2, ScaleEvents: events}, Max: 100}
	}
	rep := Report{Step: 30 * time.Second, ArrivalRate: rate, Policies: []Row{row("recommended", 1), row("optimal", 4), row("queue:24,lookahead=90", 5)}}
	w := rep.Runaway()
	if len(w) != 1 || !strings.HasPrefix(w[0], "queue:24,lookahead=90: 5 scale events (40.0 an hour, 0 reversals) where the traffic explains about 2 ") {
		t.Errorf("warnings %q, want one, for queue:24,lookahead=90", w)
	}
}
