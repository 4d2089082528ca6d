package backtest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/infscale/infscale/pkg/replay"
)

// PoolError is an error of one pool of a P/D pair (Role "prefill" or
// "decode"), so that a caller can name the role and its query.
type PoolError struct {
	Role string
	Err  error
}

func (e *PoolError) Error() string { return e.Role + " pool: " + e.Err.Error() }
func (e *PoolError) Unwrap() error { return e.Err }

// PairWorkload is a P/D pair's reconstructed traffic and what each pool
// ran.
type PairWorkload struct {
	// Workload is the pair's: the prefill pool's arrivals (every request
	// enters the pair there; its success counter counts the sidecar's
	// max_tokens=1 requests), prompt lengths from the prefill pool's
	// history (the decode pool's where it has none), output lengths from
	// the decode pool's, and Replicas the prefill pool's.
	Workload
	// DecodeRequests is the decode pool's own reconstructed requests over
	// the same range (more than Requests when llm-d's decider sent short
	// or cached prompts straight to decode; the replay disaggregates all).
	DecodeRequests float64
	// DecodeCoverage is the decode pool's coverage.
	DecodeCoverage Coverage
	// DecodeReplicas is the decode pool's replica count per grid point of
	// Grid, held across gaps as Replicas; nil without data.
	DecodeReplicas []float64
}

// ReconstructPair rebuilds a P/D pair's traffic from its pools' histories
// (Fetch of each role over the same grid), each as Reconstruct does; the
// pair's range is the prefill pool's (trimmed to its data). Errors are
// *PoolError naming the pool: ErrNoTraffic for a pool whose success
// counter never increased, no token lengths.
func ReconstructPair(pre, dec History, opts Options) (PairWorkload, error) {
	if pre.Grid != dec.Grid {
		return PairWorkload{}, errors.New("the pools' histories are on different grids")
	}
	wd, err := Reconstruct(dec, opts)
	if err != nil {
		return PairWorkload{}, &PoolError{Role: "decode", Err: err}
	}
	if pre.Prompt == nil && !(pre.PromptMean > 0) {
		pre.Prompt, pre.PromptMean = dec.Prompt, dec.PromptMean
	}
	wp, err := Reconstruct(pre, opts)
	if err != nil {
		return PairWorkload{}, &PoolError{Role: "prefill", Err: err}
	}
	pw := PairWorkload{Workload: wp, DecodeRequests: wd.Requests, DecodeCoverage: wd.Coverage}
	pw.Output = wd.Output
	if dec.Replicas != nil {
		i0 := int(wp.Grid.Start.Sub(pre.Grid.Start) / pre.Grid.Step)
		pw.DecodeReplicas = hold(sliceOr(dec.Replicas, i0, i0+wp.Grid.N))
	}
	return pw, nil
}

// PairConfig sets up RunPair.
type PairConfig struct {
	// Replay is the simulator's setting (Model required: both pools run
	// it); Epoch is set by RunPair (the grid's start); Progress, when set,
	// gets the least advanced replay's share done (now/end, 1).
	Replay replay.Config
	// PD is the pair's setting (the KV link).
	PD replay.PDConfig
	// Policies are the parsed pair policies to compare.
	Policies []replay.PDPolicy
	// Seed fixes the arrivals within steps and the token draws.
	Seed uint64
	// GPUs is the GPUs per replica; 0: unknown.
	GPUs float64
}

// PairActual is what each pool of a pair actually ran.
type PairActual struct {
	// PrefillMinutes and DecodeMinutes integrate each pool's replicas
	// query over the range (the last value held across gaps), NaN without
	// its timeline; PrefillPeak and DecodePeak are the most replicas at a
	// grid point.
	PrefillMinutes, DecodeMinutes float64
	PrefillPeak, DecodePeak       float64
	// Simulated is the replay of both pools' actual timelines (nil unless
	// both have one).
	Simulated *replay.PDResult
}

// Minutes is both pools' replica-minutes (NaN when either is unknown).
func (a PairActual) Minutes() float64 { return a.PrefillMinutes + a.DecodeMinutes }

// PairRow is one pair policy's replay with its savings against what both
// pools actually ran.
type PairRow struct {
	replay.PDResult
	// SavingsPct is (actual - policy) replica-minutes of both pools /
	// actual, percent; NaN without both actual timelines.
	SavingsPct float64
}

// PairReport is a backtest of a P/D pair.
type PairReport struct {
	Start time.Time
	End   time.Time
	Step  time.Duration
	// Requests is the pair's reconstructed arrivals (the prefill pool's);
	// DecodeRequests the decode pool's own count.
	Requests, DecodeRequests float64
	// Coverage and DecodeCoverage are each pool's.
	Coverage, DecodeCoverage Coverage
	// PromptMean and OutputMean are the token means the replay draws
	// around (prompt from the prefill pool, output from the decode pool).
	PromptMean, OutputMean float64
	Actual                 PairActual
	Policies               []PairRow
	// Fetch describes both pools' queries; ReplayTime the replays' wall
	// time.
	Fetch      FetchStats
	ReplayTime time.Duration
	// GPUs is PairConfig.GPUs; SLOTTFT the replays' TTFT SLO, seconds;
	// KVLink the link's bytes per second.
	GPUs, SLOTTFT, KVLink float64
}

// RunPair replays w through a P/D pair (replay.RunPD) under every policy
// of cfg and under both pools' actual timelines (when both have one), in
// parallel, and returns the report (Fetch left for the caller). Errors:
// the replays' (invalid config, an SLO the transfer takes, cancelled
// context).
func RunPair(ctx context.Context, w PairWorkload, cfg PairConfig) (PairReport, error) {
	g := w.Grid
	rep := PairReport{Start: g.Start, End: g.End(), Step: g.Step, Requests: w.Requests, DecodeRequests: w.DecodeRequests,
		Coverage: w.Coverage, DecodeCoverage: w.DecodeCoverage, PromptMean: w.Prompt.Mean, OutputMean: w.Output.Mean,
		GPUs: cfg.GPUs, KVLink: cfg.PD.KVLinkBytesPerSecond}
	dw := Workload{Grid: g, Replicas: w.DecodeReplicas}
	rep.Actual = PairActual{PrefillMinutes: w.ReplicaSeconds() / 60, DecodeMinutes: dw.ReplicaSeconds() / 60,
		PrefillPeak: w.Peak(), DecodePeak: dw.Peak()}
	rc := cfg.Replay
	rc.Epoch = g.Start
	rc = rc.Defaults()
	rep.SLOTTFT = rc.SLOTTFT
	pols := cfg.Policies
	hasActual := !math.IsNaN(rep.Actual.PrefillMinutes) && !math.IsNaN(rep.Actual.DecodeMinutes)
	if hasActual {
		pp, err := replay.Follow(ActualPolicy, g.Step.Seconds(), w.Replicas)
		if err != nil {
			return rep, &PoolError{Role: "prefill", Err: fmt.Errorf("the replicas query (what actually ran): %w", err)}
		}
		dp, err := replay.Follow(ActualPolicy, g.Step.Seconds(), w.DecodeReplicas)
		if err != nil {
			return rep, &PoolError{Role: "decode", Err: fmt.Errorf("the replicas query (what actually ran): %w", err)}
		}
		a, err := replay.PairOf(ActualPolicy, pp, dp)
		if err != nil {
			return rep, err
		}
		pols = append(append([]replay.PDPolicy(nil), pols...), a)
	}
	src := w.Source(fmt.Sprintf("prometheus %s..%s", g.Start.Format(time.RFC3339), g.End().Format(time.RFC3339)), cfg.Seed)
	began := time.Now()
	res, err := replay.RunAllPD(ctx, src, pols, rc, cfg.PD)
	rep.ReplayTime = time.Since(began)
	if err != nil {
		return rep, err
	}
	if hasActual {
		a := res[len(res)-1]
		res = res[:len(res)-1]
		rep.Actual.Simulated = &a
	}
	for _, r := range res {
		row := PairRow{PDResult: r, SavingsPct: math.NaN()}
		if am := rep.Actual.Minutes(); am > 0 {
			row.SavingsPct = 100 * (am - r.ReplicaSeconds()/60) / am
		}
		rep.Policies = append(rep.Policies, row)
	}
	return rep, nil
}
