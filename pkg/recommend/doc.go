// Package recommend is infscale's decision: from one Observation of a target's
// load signals, the Policy and the State (window history and past scale
// events), it computes the desired replica count with the Kubernetes HPA's own
// algorithm (HPA: pkg/controller/podautoscaler, replica_calculator.go and
// horizontal.go) plus what the HPA lacks: cold-start lookahead, scale to zero
// behind a request holder, and a schedule floor.
//
// The package is pure: Decide receives now and never reads the clock, does no
// I/O, and returns a Decision that carries a typed Reason and the arithmetic
// steps in words. The same code decides in `serve` (wall clock) and in the
// replay simulator (simulated clock).
//
// Reading guide: types.go (the contract), then decide.go (the pipeline), then
// one file per step: raw.go (per-metric arithmetic and the missing-pods
// rule), tolerance.go, lookahead.go, zero.go, stabilize.go, ratelimit.go,
// schedule.go; policy.go (Validate, the one owner of the policy rules, and
// the HPA defaults) with fielderror.go (its FieldErrors, which every syntax
// maps to its own positions) and signal.go (the one table of signals);
// decider.go (the rules a decision loop applies around Decide: current from
// the previous desired, the hold on no data; serve and the replay both run
// it), state.go (State.Validate), behavior.go (the HPA's behavior YAML),
// reversal.go (what counts as a reversal, for serve's counter and the
// replay). The state file format is pkg/statefile's.
// docs/recommend.md gives the formulas.
package recommend
