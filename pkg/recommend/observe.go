package recommend

import "math"

// ObserveReplicas aggregates per-replica samples into an Observation for a
// workload running current replicas: Running and Waiting are sums over the
// replicas that report them, KV and CPU means over the replicas that report
// them (NaN when none does), Reporting the replicas with at least one known
// signal. Held and TTFT are NaN (they do not come from the replicas' pages;
// set them afterwards). It does not allocate.
func ObserveReplicas(samples []ReplicaSample, current int) Observation {
	o := Observation{Current: current, Held: math.NaN(), TTFT: math.NaN()}
	var run, wait, kv, cpu float64
	var nRun, nWait, nKV, nCPU int
	for i := range samples {
		s := &samples[i]
		any := false
		if known(s.Running) {
			run += s.Running
			nRun++
			any = true
		}
		if known(s.Waiting) {
			wait += s.Waiting
			nWait++
			any = true
		}
		if known(s.KV) {
			kv += s.KV
			nKV++
			any = true
		}
		if known(s.CPU) {
			cpu += s.CPU
			nCPU++
			any = true
		}
		if any {
			o.Reporting++
		}
	}
	o.Running, o.Waiting, o.KV, o.CPU = nanIfNone(run, nRun, false), nanIfNone(wait, nWait, false), nanIfNone(kv, nKV, true), nanIfNone(cpu, nCPU, true)
	return o
}

func nanIfNone(sum float64, n int, mean bool) float64 {
	switch {
	case n == 0:
		return math.NaN()
	case mean:
		return sum / float64(n)
	}
	return sum
}
