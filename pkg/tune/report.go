package tune

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/infscale/infscale/pkg/replay"
)

// WriteJSON writes the report as indented JSON.
func (r Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

func pct(f float64) string { return strconv.FormatFloat(f, 'f', 2, 64) + "%" }

// pctAgainst is pct of a finalist's miss % f beside the budget, with as
// many more decimals (up to 6) as it takes to show f on its side of the
// budget: at two decimals 0.1038% and 0.0989% both read 0.10% beside a
// 0.10% budget, one over it (holds false) and one within (holds true).
func pctAgainst(f, budget float64) string {
	s := pct(f)
	if f == budget || s != pct(budget) {
		return s
	}
	for d := 3; d <= 6; d++ {
		s = strconv.FormatFloat(f, 'f', d, 64) + "%"
		if s != strconv.FormatFloat(budget, 'f', d, 64)+"%" {
			break
		}
	}
	return s
}

// WriteText writes the winner, the finalists with their in-sample and
// out-of-sample figures side by side, the frontier and the serve block.
func (r Report) WriteText(w io.Writer, traceName string) error {
	b := &strings.Builder{}
	fmt.Fprintf(b, "tune %s: in-sample [0, %.0fs), held out [%.0fs, %.0fs); budget %s misses; screened on %s; %d replays\n\n",
		traceName, r.Split, r.Split, r.Duration, pct(r.MaxMissPct), r.Screened, r.Replays)
	verdict := "holds in sample, out of sample and on every stressed copy"
	if len(r.StressNames) == 0 {
		verdict = "holds in sample and out of sample; no stressed copy (--stress none)"
	}
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
		fmt.Fprintf(b, "%-*s  %12s %12.1f  %12s %12.1f", width, f.Policy, pctAgainst(f.InSample.MissPct, r.MaxMissPct), f.InSample.ReplicaMinutes,
			pctAgainst(f.OutOfSample.MissPct, r.MaxMissPct), f.OutOfSample.ReplicaMinutes)
		for _, s := range f.Stress {
			fmt.Fprintf(b, "  %12s", pctAgainst(s.MissPct, r.MaxMissPct))
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
const TargetNote = "the target above is tune's result for your traffic, cold starts included: deploy it in place of the chart's default (queue 24, a starting point until you tune); load's knee is a ceiling for it, not a target (docs/queue-target.md)"

// Figures are one replay's outcome.
type Figures struct {
	Requests       int64   `json:"requests"`
	Misses         int64   `json:"slo_misses"`
	MissPct        float64 `json:"miss_pct"`
	ReplicaMinutes float64 `json:"replica_minutes"`
	Peak           int     `json:"peak"`
}

func figures(rs ...replay.Result) Figures {
	var f Figures
	for _, r := range rs {
		f.Requests += r.Requests
		f.Misses += r.Misses()
		f.ReplicaMinutes += r.ReplicaMinutes()
		f.Peak = max(f.Peak, r.Peak)
	}
	if f.Requests > 0 {
		f.MissPct = 100 * float64(f.Misses) / float64(f.Requests)
	}
	return f
}

// Row is one candidate's figures. Screen is on the screening sample;
// InSample, OutOfSample and Stress are set for the finalists.
type Row struct {
	Policy      string    `json:"policy"`
	Candidate   Candidate `json:"-"`
	Screen      Figures   `json:"screen"`
	InSample    *Figures  `json:"in_sample,omitempty"`
	OutOfSample *Figures  `json:"out_of_sample,omitempty"`
	Stress      []Figures `json:"stress,omitempty"`
	// ScreenStress are the screening sample's stressed copies.
	ScreenStress []Figures `json:"screen_stress,omitempty"`
	// Holds: within the budget in sample, out of sample and under stress.
	Holds bool `json:"holds"`

	screenStress [][]replay.Result // per stress, per screening source
	// pair is a P/D row's candidate (RunPD); rolePeak the most prefill
	// and decode replicas over its replays (screen, and as a finalist in
	// and out of sample and stressed).
	pair     pdCandidate
	rolePeak [2]int
	// Frontier: no screened row has a lower worst miss % (the sample and
	// its stressed copies) at no more replica time.
	Frontier bool `json:"frontier"`
}

// nearest is the row of rows (at least one) of lowest worst miss %, the
// first on a tie: the candidate a floor round raises.
func nearest(rows []Row) Row {
	r := rows[0]
	for _, x := range rows[1:] {
		if x.worst() < r.worst() {
			r = x
		}
	}
	return r
}

// probeOnce reports whether candidate c (written policy) holds within
// budget: read from finals or from the rows probed already (out), else
// probed and added to out. The floor rounds' step.
func probeOnce[C any](c C, policy string, finals []Row, out *[]Row, budget float64, probe func(C) (Row, error)) (bool, error) {
	if x, ok := replayedAs(policy, finals, *out); ok {
		return x.within(budget), nil
	}
	row, err := probe(c)
	if err != nil {
		return false, err
	}
	*out = append(*out, row)
	return row.within(budget), nil
}

// replayedAs returns the row of rows (each list in turn) whose Policy is
// p: a candidate the search replayed already (the floor rounds probe each
// policy once).
func replayedAs(p string, rows ...[]Row) (Row, bool) {
	for _, rs := range rows {
		for _, x := range rs {
			if x.Policy == p {
				return x, true
			}
		}
	}
	return Row{}, false
}

// within reports whether a finalist holds: replayed in and out of sample,
// and within budget (miss %) on every replay (Choose's test).
func (r Row) within(budget float64) bool {
	return r.InSample != nil && r.OutOfSample != nil && r.worst() <= budget
}

// replays are a finalist's figures: the screen's, in and out of sample
// and under each stress (nil for a pass not replayed).
func (r Row) replays() []*Figures {
	return append([]*Figures{&r.Screen, r.InSample, r.OutOfSample}, ptrs(r.Stress)...)
}

// worst is a finalist's highest miss percentage over every replay.
func (r Row) worst() float64 {
	w := 0.0
	for _, f := range r.replays() {
		if f != nil {
			w = max(w, f.MissPct)
		}
	}
	return w
}

// peak is the most replicas any of a finalist's replays reached.
func (r Row) peak() int {
	n := 0
	for _, f := range r.replays() {
		if f != nil {
			n = max(n, f.Peak)
		}
	}
	return n
}

// screenWorst is the highest miss percentage on the screen and its
// stressed copies.
func (r Row) screenWorst() float64 {
	w := r.Screen.MissPct
	for _, f := range r.ScreenStress {
		w = max(w, f.MissPct)
	}
	return w
}

func ptrs(fs []Figures) []*Figures {
	out := make([]*Figures, len(fs))
	for i := range fs {
		out[i] = &fs[i]
	}
	return out
}

// Outcome is a winner's verdict and figures, as Report and TargetResult
// both carry them (their JSON keys inline in theirs).
type Outcome struct {
	// Holds reports whether the winner kept within the budget (MaxMissPct,
	// percent of requests) in sample, out of sample and on every stressed
	// copy.
	Holds      bool    `json:"holds"`
	MaxMissPct float64 `json:"max_miss_pct"`
	// InSample and OutOfSample are the winner's figures on the two parts.
	InSample    Figures `json:"in_sample"`
	OutOfSample Figures `json:"out_of_sample"`
	// Stress are the winner's figures on the stressed copies (StressNames).
	Stress      []Figures `json:"stress"`
	StressNames []string  `json:"stress_names"`
}

// Report is a tuning run's outcome.
type Report struct {
	// Policy is the winner as a `simulate --policy` string.
	Policy string `json:"policy"`
	// Outcome is whether the winner holds, and its figures.
	Outcome
	// Split is the second the held-out part starts at; Duration the span.
	Split    float64 `json:"split_s"`
	Duration float64 `json:"duration_s"`
	// Screened names the screening sample.
	Screened string `json:"screened_on"`
	// Finalists are the rows replayed out of sample; Frontier the screened
	// rows no other beats on both misses and replica time; Rows every
	// screened row.
	Finalists []Row `json:"finalists"`
	Frontier  []Row `json:"frontier"`
	Rows      []Row `json:"-"`
	// Target is the winner as a whole serve configuration file (YAML,
	// Candidate.Block).
	Target string `json:"serve_target"`
	// Baselines are Config.Baselines replayed in sample and out of sample
	// beside the winner (llm-d's documented KEDA paths by default): what
	// the tuned policy buys over them on the same history.
	Baselines []Baseline `json:"baselines,omitempty"`
	// Replays counts the replays run.
	Replays int `json:"replays"`

	winner Candidate
	// pair: the rows are a P/D pair's (PDReport.Plot), replica time both
	// pools'.
	pair bool
}

// Baseline is one baseline policy's figures on the two parts.
type Baseline struct {
	Policy      string  `json:"policy"`
	InSample    Figures `json:"in_sample"`
	OutOfSample Figures `json:"out_of_sample"`
}

// DefaultBaselines are the baselines tune's report replays beside the
// winner: llm-d's four autoscaling signals (docs/llm-d.md).
var DefaultBaselines = replay.LLMDBaselines

// Winner is the chosen candidate.
func (r Report) Winner() Candidate { return r.winner }
