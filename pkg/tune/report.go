package tune

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// WriteJSON writes the report as indented JSON.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func pct(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) + "%" }

// WriteText writes the winner, the finalists with their in-sample and
// out-of-sample figures side by side, the frontier and the serve block.
func (r Report) WriteText(w io.Writer, traceName string) error {
	b := &strings.Builder{}
	fmt.Fprintf(b, "tune %s: in-sample [0, %.0fs), held out [%.0fs, %.0fs); budget %s misses; screened on %s; %d replays\n\n",
		traceName, r.Split, r.Split, r.Duration, pct(r.MaxMissPct), r.Screened, r.Replays)
	verdict := "holds in sample, out of sample and on every stressed copy"
	if !r.Holds {
		verdict = "NO candidate held everywhere; this one has the lowest worst miss %"
	}
	fmt.Fprintf(b, "winner: %s (%s)\n\n", r.Policy, verdict)
	width := len("policy")
	for _, f := range r.Finalists {
		width = max(width, len(f.Policy))
	}
	fmt.Fprintf(b, "%-*s  %12s %12s  %12s %12s", width, "finalists", "in miss %", "in rep-min", "out miss %", "out rep-min")
	for _, n := range r.StressNames {
		fmt.Fprintf(b, "  %12s", n+" miss %")
	}
	b.WriteString("  holds\n")
	for _, f := range r.Finalists {
		fmt.Fprintf(b, "%-*s  %12s %12.1f  %12s %12.1f", width, f.Policy, pct(f.InSample.MissPct), f.InSample.ReplicaMinutes,
			pct(f.OutOfSample.MissPct), f.OutOfSample.ReplicaMinutes)
		for _, s := range f.Stress {
			fmt.Fprintf(b, "  %12s", pct(s.MissPct))
		}
		fmt.Fprintf(b, "  %v\n", f.Holds)
	}
	if len(r.Baselines) > 0 {
		width = len("baselines")
		for _, bl := range r.Baselines {
			width = max(width, len(bl.Policy))
		}
		fmt.Fprintf(b, "\n%-*s  %12s %12s  %12s %12s\n", width, "baselines", "in miss %", "in rep-min", "out miss %", "out rep-min")
		for _, bl := range r.Baselines {
			fmt.Fprintf(b, "%-*s  %12s %12.1f  %12s %12.1f\n", width, bl.Policy, pct(bl.InSample.MissPct), bl.InSample.ReplicaMinutes,
				pct(bl.OutOfSample.MissPct), bl.OutOfSample.ReplicaMinutes)
		}
	}
	fmt.Fprintf(b, "\nfrontier (screening sample: no row has a lower worst miss %% over the sample and its stressed copies at no more replica time)\n")
	width = len("policy")
	for _, f := range r.Frontier {
		width = max(width, len(f.Policy))
	}
	fmt.Fprintf(b, "%-*s  %10s %12s %18s\n", width, "policy", "miss %", "replica-min", "worst stressed %")
	for _, f := range r.Frontier {
		fmt.Fprintf(b, "%-*s  %10s %12.1f %18s\n", width, f.Policy, pct(f.Screen.MissPct), f.Screen.ReplicaMinutes, pct(f.screenWorst()))
	}
	fmt.Fprintf(b, "\nserve config (a whole file for serve --config; check max against the Deployment's quota):\n\n%s", r.Target)
	fmt.Fprintf(b, "\n%s\n", TargetNote)
	_, err := io.WriteString(w, b.String())
	return err
}

// TargetNote closes tune's text output: how its target relates to load's
// knee and the chart's default (docs/queue-target.md).
const TargetNote = "this target holds your traffic through a cold start; load's knee is the ceiling it must stay under, and the chart's queue 24 only a placeholder until you tune (docs/queue-target.md)"
