package replay

import (
	"fmt"
	"math"

	"github.com/infscale/infscale/pkg/recommend"
)

// PerReplica is the concurrency one replica holds under pol and the mean
// request latency at that concurrency from the replica model m (prefill of
// the mean prompt + mean output × the decode step at that batch with half
// the output generated): Little's law gives conc / latency requests/s per
// replica. The concurrency is pol's queue or running target (at most the
// max batch), else OracleUtilization × the max batch; how says which.
// promptMean and outputMean are tokens per request.
func PerReplica(m Model, pol Policy, promptMean, outputMean float64) (conc, latency float64, how string) {
	conc = OracleUtilization * float64(m.MaxBatch())
	how = fmt.Sprintf("%.0f%% of max batch %d", 100*OracleUtilization, m.MaxBatch())
	if pol.Recommend != nil {
		for _, mt := range pol.Recommend.Metrics {
			if mt.Signal == recommend.SignalQueue || mt.Signal == recommend.SignalRunning {
				conc = min(mt.Target, float64(m.MaxBatch()))
				how = fmt.Sprintf("%s target %g", mt.Signal, mt.Target)
				break
			}
		}
	}
	b := max(int(math.Round(conc)), 1)
	ctx := int64(float64(b) * (promptMean + outputMean/2))
	latency = m.PrefillTime(int(math.Round(promptMean))) + outputMean*m.StepTime(b, ctx)
	return conc, latency, how
}
