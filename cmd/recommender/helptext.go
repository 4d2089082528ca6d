package main

// The long help of the commands whose output has columns, units or row
// names a new user has to look up: a short paragraph under the usage line
// of `--help` (kong's HelpProvider), pointing at docs/README.md's
// "Reading the output", where every word is explained once.

const readingTheOutput = "Every column, unit and reason: docs/README.md, \"Reading the output\"."

// Help is decide's long help: what its reason is.
func (c *DecideCmd) Help() string {
	return "The first line says the desired replicas and the reason: the step of the pipeline that set them; the steps follow, one a line. " + readingTheOutput
}

// Help is serve's long help: what its records and the demo's table say.
func (c *ServeCmd) Help() string {
	return "Each decision (the demo's table, /debug/decisions, the audit log, infscale_decision_reason) carries the reason: the step of the pipeline that set the desired replicas. rate is requests per second over all replicas of a target. " + readingTheOutput
}

// Help is simulate's long help: the units and the reference rows.
func (c *SimulateCmd) Help() string {
	return "replica-min is replicas x minutes (starting, ready and draining); GPU cost is replica-min / 60 x GPUs per replica (--tp) x --gpu-hour-price; tokens/GPU-h the output tokens per GPU-hour. " +
		"recommended is infscale's preset policy; oracle reads the trace ahead (a reference, not deployable); optimal is the cheapest schedule found in hindsight, the limit every row is measured against. " + readingTheOutput
}

// Help is backtest's long help: the rows, the warnings and the fidelity.
func (c *BacktestCmd) Help() string {
	return "actual (observed) is what ran; actual (simulated) replays it, and the fidelity line grades how close the replay comes (good, fair, poor, with what to do). " +
		"A warning names a policy that ran away: its peak at its max, or its scale events over twice what the traffic explains (docs/backtest.md). " + readingTheOutput
}
