package serve

import (
	"math"
	"sync/atomic"
	"time"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/recommend"
)

// target is one configured target at run time: its config, policy and what
// the loop remembers between cycles.
type target struct {
	// cfg is the configured target, or a P/D target's pool
	// (config.Target.RoleTarget: cfg.Role set).
	cfg    config.Target
	policy recommend.Policy
	// key names the target's series, state file and decisions: its name,
	// or a P/D pool's name@role.
	key string
	// heldReader identifies how its held count is read (heldReader),
	// set by SetConfig.
	heldReader string

	// run is the decision loop's memory: State, the last exported desired
	// value and the last known current count (recommend.Decider).
	run recommend.Decider
	// recent are the last nRecent decisions (for /debug/decisions), a ring
	// whose oldest is recent[oldest], compact and inside the target (one
	// object per target, none of a size class of its own); newest holds
	// the newest's raw results and steps.
	recent          [maxRecent]pastRecord
	nRecent, oldest uint8
	// dupLogged is set once folded duplicate series were logged.
	dupLogged bool
	// undo holds, for a target that applies its decisions (apply: true),
	// its scale events before this cycle's decision: a write that fails
	// puts them back (reportWrite). nil for the others.
	undo *scaleEvents
	// restoring is true from SetConfig's install of a new target until its
	// restore has finished: cycles leave it out meanwhile.
	restoring atomic.Bool
	newest    struct {
		raw   recommend.RawResults
		steps []recommend.Step
		pair  *PairNote
	}
}

// maxRecent is how many decisions per target /debug/decisions keeps.
const maxRecent = 5

// Record is one decision as /debug/decisions and the audit log show it.
type Record struct {
	Target string `json:"target"`
	// Role is a P/D target's pool (prefill, decode); absent otherwise.
	Role string    `json:"role,omitempty"`
	At   time.Time `json:"at"`
	// Desired is what was exported; Current the current replica count the
	// decision worked from (the replicas query, else the last desired: the
	// spec the consumer sets); Observed the replicas read this cycle (the
	// replicas query, else the replicas reporting; null unknown).
	Desired  int  `json:"desired"`
	Current  int  `json:"current"`
	Observed *int `json:"observed"`
	// Reason is the step that decided (recommend.Reason names).
	Reason string `json:"reason"`
	// Held is true when the decision held the last desired value because no
	// signal was known (nothing is decided on no data).
	Held bool `json:"held,omitempty"`
	// Signals observed (null when unknown).
	Signals Signals `json:"signals"`
	// Raw is each metric's raw recommendation, and Steps the arithmetic
	// (in /debug/decisions only on the newest decision of a target).
	Raw   recommend.RawResults `json:"raw,omitempty"`
	Steps []recommend.Step     `json:"steps,omitempty"`
	// Errors are the failed reads of this cycle ("signal: reason: error").
	Errors []string `json:"errors,omitempty"`
	// Warnings are Prometheus's warnings on this cycle's queries of the
	// target (the values came with them and were read), embedded mode's
	// pages without a load sample, a P/D pool read as the other role, and
	// held 0 carried for an llm-d pool idle at zero (carryHeldZero).
	Warnings []string `json:"warnings,omitempty"`
	// Stuck is the number of replicas read as stuck engines this cycle (null
	// when the source could not tell), and StuckReplicas their scrape URLs
	// (embedded mode). In embedded mode they did not vote: their requests
	// are not in Signals and they count as missing pods (docs/serve.md).
	Stuck         *int     `json:"stuck,omitempty"`
	StuckReplicas []string `json:"stuck_replicas,omitempty"`
	// Applied is the spec.replicas written to the workload this cycle
	// (apply: true; absent when nothing was written), and ApplyError why
	// a write was refused (an HPA or a KEDA ScaledObject scales it) or
	// failed.
	Applied    *int   `json:"applied,omitempty"`
	ApplyError string `json:"apply_error,omitempty"`
	// ApplySkipped says why a decision that differed from the workload's
	// spec.replicas was not written by this instance: it does not hold the
	// Lease (--leader-elect; the holder writes). Without it such a record
	// read like one with nothing to write.
	ApplySkipped string `json:"apply_skipped,omitempty"`
	// Pair is a P/D pool's ratio bound this cycle (recommend.Bound);
	// absent for other targets, or when a pool was not decided.
	Pair *PairNote `json:"pair,omitempty"`
}

// PairNote is the ratio bound a P/D pool's decision saw: the pair's
// ratio (decode replica-seconds per prefill replica-second at the decode
// pool's mean lengths; null unknown), the pool's floor from the other
// pool's demand (0: none), and when the floor raised the decision, the
// desired replicas before it (RaisedFrom).
type PairNote struct {
	Ratio      *float64 `json:"ratio"`
	Floor      int      `json:"floor"`
	RaisedFrom *int     `json:"raised_from,omitempty"`
}

// roleName is r's label value, "" for a target that is no pool.
func roleName(r recommend.Role) string {
	if r == 0 {
		return ""
	}
	return r.String()
}

// key is the series key of the target r was decided for (target.key).
func (r *Record) key() string {
	if r.Role == "" {
		return r.Target
	}
	return r.Target + roleSep + r.Role
}

// Signals are the observed values of one decision; nil is unknown.
type Signals struct {
	Queue   *float64 `json:"queue"`
	Running *float64 `json:"running"`
	Waiting *float64 `json:"waiting"`
	Held    *float64 `json:"held"`
	KV      *float64 `json:"kv"`
	CPU     *float64 `json:"cpu_percent"`
	TTFT    *float64 `json:"ttft_seconds"`
	// The demand signals (absent when unknown, or not read for the target).
	QueueTime            *float64 `json:"queue_time_seconds,omitempty"`
	ITL                  *float64 `json:"inter_token_latency_seconds,omitempty"`
	ArrivalRate          *float64 `json:"arrival_rate_requests_per_second,omitempty"`
	PromptTokensRate     *float64 `json:"prompt_tokens_per_second,omitempty"`
	GenerationTokensRate *float64 `json:"generation_tokens_per_second,omitempty"`
	MeanPrompt           *float64 `json:"mean_prompt_tokens,omitempty"`
	MeanOutput           *float64 `json:"mean_output_tokens,omitempty"`
	PrefixCacheHit       *float64 `json:"prefix_cache_hit_ratio,omitempty"`
}

func known(v float64) *float64 {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return nil
	}
	return &v
}

// signalsOf returns the observed signals, queue included (running + waiting
// + held, unknown when running or waiting is).
func signalsOf(o recommend.Observation) Signals {
	q := o.Running + o.Waiting
	if h := o.Held; !math.IsNaN(h) && h > 0 {
		q += h
	}
	return Signals{Queue: known(q), Running: known(o.Running), Waiting: known(o.Waiting), Held: known(o.Held),
		KV: known(o.KV), CPU: known(o.CPU), TTFT: known(o.TTFT),
		QueueTime: known(o.QueueTime), ITL: known(o.ITL), ArrivalRate: known(o.ArrivalRate),
		PromptTokensRate: known(o.PromptTokensRate), GenerationTokensRate: known(o.GenerationTokensRate),
		MeanPrompt: known(o.MeanPrompt), MeanOutput: known(o.MeanOutput), PrefixCacheHit: known(o.PrefixHit)}
}

// signalMapInto adds the observed signals to m.
func signalMapInto(m map[string]float64, s Signals) {
	put := func(k string, p *float64) {
		if p != nil {
			m[k] = *p
		}
	}
	put("queue", s.Queue)
	put("running", s.Running)
	put("waiting", s.Waiting)
	put("held", s.Held)
	put("kv", s.KV)
	put("cpu", s.CPU)
	put("ttft", s.TTFT)
	put("queue_time", s.QueueTime)
	put("itl", s.ITL)
	put("arrival_rate", s.ArrivalRate)
	put("prompt_tokens_rate", s.PromptTokensRate)
	put("generation_tokens_rate", s.GenerationTokensRate)
	put("mean_prompt", s.MeanPrompt)
	put("mean_output", s.MeanOutput)
	put("prefix_cache_hit", s.PrefixCacheHit)
}

// remember appends r to the recent decisions; older ones keep their
// outcome and signals but drop their steps and raw results (memory: 10,000
// targets x 5 decisions), which the audit log keeps in full.
func (t *target) remember(r Record) {
	t.newest.raw, t.newest.steps, t.newest.pair = r.Raw, r.Steps, r.Pair
	p := compact(r)
	if t.nRecent < maxRecent {
		t.recent[(int(t.oldest)+int(t.nRecent))%maxRecent] = p
		t.nRecent++
		return
	}
	// Full: the newest takes the oldest's place (readers copy under the
	// loop's lock).
	t.recent[t.oldest] = p
	t.oldest = (t.oldest + 1) % maxRecent
}

// noteWrite sets the newest decision's write outcome (Record.Applied and
// ApplyError), known only after the cycle's writes.
func (t *target) noteWrite(applied *int, applyError, applySkipped string) {
	if t.nRecent == 0 {
		return
	}
	p := &t.recent[(int(t.oldest)+int(t.nRecent)-1)%maxRecent]
	if applied != nil {
		p.applied, p.hasApplied = *applied, true
	}
	if applyError != "" {
		if p.rare == nil {
			p.rare = &pastRare{}
		}
		p.rare.applyError = applyError
	}
	if applySkipped != "" {
		if p.rare == nil {
			p.rare = &pastRare{}
		}
		p.rare.applySkipped = applySkipped
	}
}

// records are the recent decisions as Records, newest last (only the
// newest with its raw results and steps).
func (t *target) records() []Record {
	if t.nRecent == 0 {
		return nil
	}
	out := make([]Record, t.nRecent)
	for i := range out {
		out[i] = t.recent[(int(t.oldest)+i)%maxRecent].record(t.cfg.Name)
		out[i].Role = roleName(t.cfg.Role)
	}
	if n := len(out); n > 0 {
		out[n-1].Raw, out[n-1].Steps, out[n-1].Pair = t.newest.raw, t.newest.steps, t.newest.pair
	}
	return out
}

// pastRecord is a Record as a target keeps it: the target's name, raw
// results and steps left out, and values in place of pointers (fewer
// objects for the garbage collector: 10,000 targets keep 50,000).
type pastRecord struct {
	at                       time.Time
	desired, current         int
	observed, stuck, applied int // valid when has* is set
	hasObserved, hasStuck    bool
	hasApplied, held         bool
	reason                   string
	signals                  [signalFields]float64 // NaN: unknown (null)
	rare                     *pastRare             // nil: none of its fields set
}

// pastRare are the fields of a pastRecord that most decisions leave unset,
// kept aside (8 bytes a record instead of 64 when unset).
type pastRare struct {
	errors, stuckReplicas, warnings []string
	applyError, applySkipped        string
}

// signalFields is the number of Signals fields.
const signalFields = 15

// fields are the addresses of s's fields, in a fixed order.
func (s *Signals) fields() [signalFields]**float64 {
	return [signalFields]**float64{&s.Queue, &s.Running, &s.Waiting, &s.Held, &s.KV, &s.CPU, &s.TTFT,
		&s.QueueTime, &s.ITL, &s.ArrivalRate, &s.PromptTokensRate, &s.GenerationTokensRate, &s.MeanPrompt, &s.MeanOutput, &s.PrefixCacheHit}
}

func compact(r Record) pastRecord {
	p := pastRecord{at: r.At, desired: r.Desired, current: r.Current, held: r.Held, reason: r.Reason}
	if r.Errors != nil || r.StuckReplicas != nil || r.Warnings != nil || r.ApplyError != "" || r.ApplySkipped != "" {
		p.rare = &pastRare{errors: r.Errors, stuckReplicas: r.StuckReplicas, warnings: r.Warnings, applyError: r.ApplyError, applySkipped: r.ApplySkipped}
	}
	if r.Observed != nil {
		p.observed, p.hasObserved = *r.Observed, true
	}
	if r.Stuck != nil {
		p.stuck, p.hasStuck = *r.Stuck, true
	}
	if r.Applied != nil {
		p.applied, p.hasApplied = *r.Applied, true
	}
	for i, f := range r.Signals.fields() {
		p.signals[i] = math.NaN()
		if *f != nil {
			p.signals[i] = **f // known(): never NaN
		}
	}
	return p
}

func (p *pastRecord) record(target string) Record {
	r := Record{Target: target, At: p.at, Desired: p.desired, Current: p.current, Reason: p.reason, Held: p.held}
	if p.rare != nil {
		r.Errors, r.StuckReplicas, r.Warnings, r.ApplyError, r.ApplySkipped = p.rare.errors, p.rare.stuckReplicas, p.rare.warnings, p.rare.applyError, p.rare.applySkipped
	}
	if p.hasObserved {
		v := p.observed
		r.Observed = &v
	}
	if p.hasStuck {
		v := p.stuck
		r.Stuck = &v
	}
	if p.hasApplied {
		v := p.applied
		r.Applied = &v
	}
	vals := p.signals // one copy for all the pointers
	for i, f := range r.Signals.fields() {
		if !math.IsNaN(vals[i]) {
			*f = &vals[i]
		}
	}
	return r
}

// scaleEvents are a State's scale events, as a decision found them.
type scaleEvents struct {
	up, down []recommend.ScaleEvent
}

// keepEvents notes t's scale events before its decision when t writes
// its decisions: the HPA records a scale event only once its update of
// the scale subresource succeeded (reconcileAutoscaler's storeScaleEvent
// after Scales.Update), so a failed write must not count in the rate
// limits' periods.
func (t *target) keepEvents() {
	if !t.cfg.Apply {
		t.undo = nil
		return
	}
	if t.undo == nil {
		t.undo = &scaleEvents{}
	}
	st := &t.run.State
	t.undo.up = append(t.undo.up[:0], st.ScaleUpEvents...)
	t.undo.down = append(t.undo.down[:0], st.ScaleDownEvents...)
}

// dropEvents puts back the scale events keepEvents noted: this cycle's
// decision was not written.
func (t *target) dropEvents() {
	if t.undo == nil {
		return
	}
	st := &t.run.State
	st.ScaleUpEvents = append(st.ScaleUpEvents[:0], t.undo.up...)
	st.ScaleDownEvents = append(st.ScaleDownEvents[:0], t.undo.down...)
}
