package backtest

import (
	"context"
	"fmt"
	"math"
	"time"

	"github.com/infscale/infscale/pkg/replay"
)

// ActualPolicy is the row label of the replay that follows the replica
// timeline that actually ran.
const ActualPolicy = "actual"

// Config sets up Run.
type Config struct {
	// Replay is the simulator's setting (Model required); Epoch and
	// Timeline are set by Run (the grid's start; timelines are recorded for
	// fidelity and plots).
	Replay replay.Config
	// Policies are the parsed policies to compare.
	Policies []replay.Policy
	// Seed fixes the arrivals within steps and the token draws.
	Seed uint64
	// GPUs is the GPUs per replica (the rows' GPU-hours); 0: unknown.
	GPUs float64
}

// Actual is what actually ran.
type Actual struct {
	// ReplicaMinutes integrates the replicas query over the range (the
	// last value held across gaps); NaN without a replicas timeline.
	ReplicaMinutes float64
	// Peak is the most replicas at a grid point.
	Peak float64
	// TTFTP95 is the observed p95 TTFT over the range, seconds, and
	// MissPct the observed share of requests whose TTFT exceeded the SLO,
	// percent; both from the TTFT histogram's buckets (NaN without one).
	TTFTP95 float64
	MissPct float64
	// MissPctLow and MissPctHigh bound MissPct by the buckets, percent:
	// the requests in buckets wholly above the SLO, and all but those in
	// buckets wholly at or below it (MissPct splits the bucket holding the
	// SLO linearly). Equal when the SLO is a bucket bound; NaN as MissPct.
	MissPctLow, MissPctHigh float64
	// Simulated is the replay of the actual replica timeline.
	Simulated *replay.Result
}

// Row is one policy's replay with its savings against what actually ran.
type Row struct {
	replay.Result
	// SavingsPct is (actual - policy) replica-minutes / actual, percent;
	// NaN without the actual timeline.
	SavingsPct float64
	// Max is the most replicas the policy may ask for (replay.Policy.Max).
	Max int
}

// Report is a backtest's outcome.
type Report struct {
	Start time.Time
	End   time.Time
	Step  time.Duration
	// Requests is the reconstructed total.
	Requests float64
	Coverage Coverage
	// PromptMean and OutputMean are the token means the replay draws around.
	PromptMean float64
	OutputMean float64
	Actual     Actual
	Policies   []Row
	Fidelity   *Fidelity
	// Fetch describes the Prometheus queries; ReplayTime the replays' wall time.
	Fetch      FetchStats
	ReplayTime time.Duration
	// Arrivals per step (requests/s) and Replicas per grid point, for plots.
	ArrivalRate []float64
	Replicas    []float64
	// GPUs is Config.GPUs, for the rows.
	GPUs float64
	// TTFTHourly is the observed p95 TTFT per hour (NaN: no request).
	TTFTHourly []HourValue
	// Calibration is the fit from this history the replays used (nil:
	// the replica flags' model; set by the caller).
	Calibration *CalibrationFit
	// CalibrationFile is where the calibration was written.
	CalibrationFile string
	// SLOTTFT is the replays' TTFT SLO, seconds (the fidelity verdict's scale).
	SLOTTFT float64
	// ColdStart is the replayed replica's cold start, seconds (the
	// legend writes `recommended` out with it); 0 when unknown.
	ColdStart float64
	// Replica names the replayed replica for the legend when it is a
	// calibrated one ("the replica calibrated from FILE"; set by the
	// caller); "" when the replica flags' model ran.
	Replica string
}

// Run replays w under every policy of cfg and under the actual replica
// timeline (when w has one), in parallel, and returns the report (Fetch
// stats left for the caller). Errors: the replay's (invalid config,
// cancelled context).
func Run(ctx context.Context, w Workload, cfg Config) (Report, error) {
	g := w.Grid
	rep := Report{Start: g.Start, End: g.End(), Step: g.Step, Requests: w.Requests, Coverage: w.Coverage,
		PromptMean: w.Prompt.Mean, OutputMean: w.Output.Mean, GPUs: cfg.GPUs}
	rep.Actual = Actual{ReplicaMinutes: w.ReplicaSeconds() / 60, Peak: w.Peak(), TTFTP95: math.NaN(), MissPct: math.NaN(),
		MissPctLow: math.NaN(), MissPctHigh: math.NaN()}
	rc := cfg.Replay
	rc.Epoch = g.Start
	rc.Timeline = true
	rc = rc.Defaults()
	rep.SLOTTFT = rc.SLOTTFT
	if rc.Model != nil {
		rep.ColdStart = rc.Model.ColdStart()
	}
	if w.TTFT != nil {
		rep.Actual.TTFTP95 = w.TTFT.Quantile(0.95)
		rep.Actual.MissPct = 100 * w.TTFT.FractionAbove(rc.SLOTTFT)
		rep.Actual.MissPctLow = 100 * w.TTFT.FractionAboveEdge(rc.SLOTTFT)
		rep.Actual.MissPctHigh = 100 * w.TTFT.FractionAboveAtMost(rc.SLOTTFT)
	}
	pols := cfg.Policies
	hasActual := len(w.Replicas) > 0 && !math.IsNaN(w.Replicas[0])
	if hasActual {
		p, err := replay.Follow(ActualPolicy, g.Step.Seconds(), w.Replicas)
		if err != nil {
			return rep, fmt.Errorf("the replicas query (what actually ran, one value per step from %s): %w", g.Start.Format(time.RFC3339), err)
		}
		pols = append(append([]replay.Policy(nil), pols...), p)
	}
	src := w.Source(fmt.Sprintf("prometheus %s..%s", g.Start.Format(time.RFC3339), g.End().Format(time.RFC3339)), cfg.Seed)
	began := time.Now()
	res, err := replay.RunAll(ctx, src, pols, rc)
	rep.ReplayTime = time.Since(began)
	if err != nil {
		return rep, err
	}
	if hasActual {
		a := res[len(res)-1]
		res = res[:len(res)-1]
		rep.Actual.Simulated = &a
		rep.Fidelity = fidelity(g, w.TTFTHourly, a.Timeline)
	}
	for i, r := range res {
		row := Row{Result: r, SavingsPct: math.NaN(), Max: cfg.Policies[i].Max()}
		if am := rep.Actual.ReplicaMinutes; am > 0 {
			row.SavingsPct = 100 * (am - r.ReplicaMinutes()) / am
		}
		rep.Policies = append(rep.Policies, row)
	}
	rep.ArrivalRate = make([]float64, g.N+1)
	for j := 1; j <= g.N; j++ {
		rep.ArrivalRate[j] = w.Arrivals[j] / g.Step.Seconds()
	}
	rep.Replicas = w.Replicas
	rep.TTFTHourly = w.TTFTHourly
	return rep, nil
}
