package backtest

import (
	"fmt"
	"math"

	"github.com/infscale/infscale/pkg/replay"
)

// Runaway thresholds (docs/backtest.md, "Warnings").
//
// A policy's scale events are explained by the traffic when they are about
// the unit steps needed to follow its hourly mean arrival rate at the
// policy's own sizing, plus a little noise: ExplainedEvents is the total
// variation of the hourly mean rate, Σ|λ_h − λ_{h−1}|, divided by the
// requests per replica-second the policy averaged (the replicas one more
// request per second costs it); NoisePairsPerHour adds one up-and-down pair
// an hour for a rate that sits near a replica boundary, where the Poisson
// noise of a minute's arrivals (1/√(60λ) of the rate: 4% at 10 req/s)
// crosses it and back even under a damped policy. A policy with more than
// RunawayFactor times that scales on noise or oscillates.
const (
	NoisePairsPerHour = 1
	RunawayFactor     = 2
)

// ExplainedEvents is the scale events the traffic explains for a policy
// whose replays averaged perReplica requests per replica-second: the total
// variation of the hourly mean arrival rate (rate: requests/s per step of
// step seconds, entry 0 ignored, as Report.ArrivalRate) in replicas, plus
// NoisePairsPerHour up-and-down pairs per hour of the span, counting a
// span under an hour as one: a policy's first step away from the replicas
// that ran, on 7.5 minutes of history, was "more than 2x" an allowance of
// 0.25 events and read as scaling on noise. NaN when perReplica is not > 0
// or there is no full step.
func ExplainedEvents(rate []float64, step, perReplica float64) float64 {
	if !(perReplica > 0) || !(step > 0) || len(rate) < 2 {
		return math.NaN()
	}
	per := max(1, int(math.Round(3600/step))) // steps per hour
	var hourly []float64
	for j := 1; j < len(rate); j += per {
		sum, n := 0.0, 0
		for k := j; k < min(j+per, len(rate)); k++ {
			if !math.IsNaN(rate[k]) {
				sum += rate[k]
				n++
			}
		}
		if n > 0 {
			hourly = append(hourly, sum/float64(n))
		}
	}
	tv := 0.0
	for h := 1; h < len(hourly); h++ {
		tv += math.Abs(hourly[h] - hourly[h-1])
	}
	hours := float64(len(rate)-1) * step / 3600
	return tv/perReplica + 2*NoisePairsPerHour*max(hours, 1)
}

// Runaway lists, per policy row, why it looks like a runaway: its peak
// reached its max (it asked for every replica it could: the signal kept
// rising under added replicas, or max is too low for the traffic), or its
// scale events exceed RunawayFactor × ExplainedEvents. Empty when none.
func (rep Report) Runaway() []string {
	var out []string
	step := rep.Step.Seconds()
	for _, r := range rep.Policies {
		if r.Max > 0 && r.Peak >= r.Max && r.Max < replay.MaxReplicas {
			out = append(out, fmt.Sprintf("%s: peaked at its max, %d replicas: it asked for every replica it could (a signal that kept rising as replicas were added, or a max too low for the traffic); compare its TTFT with the oracle's and check the max",
				r.Policy, r.Peak))
		}
		if !(r.ReplicaSeconds > 0) || r.Requests == 0 {
			continue
		}
		exp := ExplainedEvents(rep.ArrivalRate, step, float64(r.Requests)/r.ReplicaSeconds)
		if limit := RunawayFactor * exp; float64(r.ScaleEvents) > limit {
			hours := float64(len(rep.ArrivalRate)-1) * step / 3600
			out = append(out, fmt.Sprintf("%s: %d scale events (%.1f an hour, %d reversals) where the traffic explains about %.0f (the hourly rate's swings at its sizing plus one up-and-down pair an hour): more than %dx, it scales on noise or oscillates; a longer downwindow, a wider tolerance or a lower lookahead calms it",
				r.Policy, r.ScaleEvents, float64(r.ScaleEvents)/hours, r.Reversals, exp, RunawayFactor))
		}
	}
	return out
}

// Fidelity grades (docs/backtest.md, "Fidelity"). The observed p95 comes
// from histogram buckets: vLLM's TTFT buckets around 0.1-1 s are a factor
// of 2 to 2.5 apart, so an interpolated quantile is typically within about
// a quarter of the truth: a median relative error up to GoodRelError is as
// close as the observation itself can say. Up to FairRelError the replay
// is off by about a bucket. An error small beside the SLO (mean |error| up
// to GoodSLOShare, FairSLOShare of it) moves few requests across the SLO,
// whatever its relative size on small TTFTs.
const (
	GoodRelError = 0.25
	FairRelError = 0.5
	GoodSLOShare = 0.05
	FairSLOShare = 0.25
)

// Verdict grades the fidelity for a TTFT SLO of slo seconds: "good",
// "fair" or "poor" (the better of the relative and the SLO-scaled grade),
// with what the grade means and what to do about it.
func (f Fidelity) Verdict(slo float64) (grade, advice string) {
	rank := func(v, good, fair float64) int {
		switch {
		case v <= good:
			return 0
		case v <= fair:
			return 1
		}
		return 2 // also NaN
	}
	g := rank(f.MedianRelError, GoodRelError, FairRelError)
	if slo > 0 {
		g = min(g, rank(f.MeanAbsErrorS/slo, GoodSLOShare, FairSLOShare))
	}
	switch g {
	case 0:
		return "good", fmt.Sprintf("median relative error <= %.0f%%, about a histogram bucket's resolution, or mean |error| <= %.0f%% of the SLO: the rows' misses can be trusted",
			100*GoodRelError, 100*GoodSLOShare)
	case 1:
		return "fair", fmt.Sprintf("median relative error <= %.0f%% or mean |error| <= %.0f%% of the SLO: compare policies with each other rather than trust absolute misses; --calibrate FILE fits the replica model to this history",
			100*FairRelError, 100*FairSLOShare)
	}
	return "poor", fmt.Sprintf("median relative error > %.0f%% and mean |error| > %.0f%% of the SLO: the simulated replica is not this fleet's; give the fleet's --gpu, --model (or --model-config FILE) and --tp, or --calibrate FILE to fit it to this history, before trusting any row",
		100*FairRelError, 100*FairSLOShare)
}

// SLOWarning is replay.SLOWarning (Result.SLOWarning) of the history's
// first replay, the first policy row's, else the actual timeline's: every
// replay of one history replays the same requests, so the first says it
// for all. The warning: no request can meet the SLO even alone on an idle
// replica. "" when one can, or when nothing was replayed.
func (rep Report) SLOWarning() string {
	switch {
	case len(rep.Policies) > 0:
		return rep.Policies[0].SLOWarning(rep.SLOTTFT)
	case rep.Actual.Simulated != nil:
		return rep.Actual.Simulated.SLOWarning(rep.SLOTTFT)
	}
	return ""
}

// SLOWarning is Report.SLOWarning of a pair's first replay, through
// replay.PDResult.SLOWarning (its least TTFT: prefill, KV transfer and a
// decode step on idle pools).
func (rep PairReport) SLOWarning() string {
	switch {
	case len(rep.Policies) > 0:
		return rep.Policies[0].SLOWarning(rep.SLOTTFT)
	case rep.Actual.Simulated != nil:
		return rep.Actual.Simulated.SLOWarning(rep.SLOTTFT)
	}
	return ""
}

// nonEmpty is msg as a list: none when msg is "".
func nonEmpty(msg string) []string {
	if msg == "" {
		return nil
	}
	return []string{msg}
}

// readWarnings are the warnings about what the history read holds: the
// fetch's and zeroActual's (a fresh slice).
func (rep Report) readWarnings() []string {
	return append(append([]string(nil), rep.Fetch.Warnings...), rep.zeroActual()...)
}

// zeroActual warns when the replicas query reads 0 at every step while
// requests completed: the query counts another workload's replicas (no
// replica served nothing), and the actual rows would stand for nothing.
func (rep Report) zeroActual() []string {
	a := rep.Actual
	if a.Simulated == nil || a.ReplicaMinutes != 0 || a.Peak != 0 || !(rep.Requests >= 1) {
		return nil
	}
	return []string{fmt.Sprintf("the replicas query reads 0 at every step while %.0f requests completed: the actual rows replay no replica (every request missed) and vs actual is unknown; check that it counts the replicas of the workload --selector matches", rep.Requests)}
}
