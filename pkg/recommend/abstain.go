package recommend

// TTFTAbstains reports whether the ttft metric abstains on obs: its
// quantile is undefined because no request finished in the window
// (Observation.NoneFinished) while the target is known to be idle (running
// and waiting both known and 0). That is known idleness, not missing data:
// an abstaining metric neither recommends nor blocks a scale-down (the
// HPA's partial-data rule is for reads that failed). A NaN quantile with
// requests running or waiting, or with either unknown, stays unknown.
func TTFTAbstains(obs Observation) bool {
	return obs.NoneFinished && !known(obs.TTFT) &&
		known(obs.Running) && known(obs.Waiting) && obs.Running == 0 && obs.Waiting == 0
}
