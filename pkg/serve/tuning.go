package serve

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/internal/atomicfile"
	"github.com/infscale/infscale/internal/boundedfile"
	"github.com/infscale/infscale/internal/crashlog"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/promql"
	"github.com/infscale/infscale/pkg/recommend"
	"github.com/infscale/infscale/pkg/replay"
	"github.com/infscale/infscale/pkg/tune"
)

// Tuned policy states (infscale_tuned_policy_info's state label).
const (
	// TuneStateShadow: the candidate is decided beside the live policy
	// and exported, nothing more (shadow mode, or adopt mode while the
	// last switch is less than every ago).
	TuneStateShadow = "shadow"
	// TuneStateAdopted: the candidate decides the target.
	TuneStateAdopted = "adopted"
	// TuneStateReverted: the adopted candidate's live SLO misses exceeded
	// max_miss; the configured policy decides again.
	TuneStateReverted = "reverted"
	// TuneStateRejected: the candidate did not hold in and out of sample
	// and under stress (adopt mode), so it was not adopted.
	TuneStateRejected = "rejected"
)

// maxClockSkew is how far after serve's clock a tune.dir result's at may
// be (the CronJob's node's clock a little ahead).
const maxClockSkew = 5 * time.Minute

// tuneRetry is how soon after its end a failed in-process tuning run
// (Prometheus unreachable, no traffic in the history) is first tried
// again; retryDelay doubles it on each failure in a row.
const tuneRetry = 15 * time.Minute

// retryDelay is how long after its end an in-process run that failed,
// the failures-th in a row (1 for the first), is tried again: tuneRetry
// doubled on each failure after the first, capped at every (client-go's
// workqueue ItemExponentialFailureRateLimiter, base tuneRetry and max
// every; a run that succeeds resets the count, as its Forget, and so does
// a reload that changes the target). With every 24h: 15m, 30m, 1h, 2h,
// 4h, 8h, 16h, then 24h. Counted from the run's
// end, not its start, so that runs failing slowly (a Prometheus that
// answers each history query after minutes, then 503) never follow one
// another back to back, and a failure that lasts costs the tuner's core
// and Prometheus one run per every, not four an hour. Too little history
// (a new target) is not a failure to back off from: tuneRetry each time.
func retryDelay(failures int, every time.Duration) time.Duration {
	d := tuneRetry
	for i := 1; i < failures && d < every; i++ {
		d *= 2
	}
	return min(d, every)
}

// failRepeat is how often the same tuning failure is logged again at its
// level (a refused tune.dir file is read each minute; between, debug).
const failRepeat = time.Hour

// staleResults is how many tune.every a tune.dir result's at may be
// behind serve's clock before serve says so: the CronJob writes one each
// every, so an older one whose file was not rewritten in that time either
// means a missed run (it failed, or stopped) while serve goes on with what
// it last wrote.
const staleResults = 2

// repeated is a failure said at its level at most once per failRepeat:
// the same kind of failure again within it is said at debug.
type repeated struct {
	kind string
	at   time.Time // when kind was last said at its level
}

// loud records err at now and reports whether it is said at its level: a
// failure of another kind than the last (failKind), or of the same once
// failRepeat has passed.
func (r *repeated) loud(err error, now time.Time) bool {
	if k := failKind(err); k != r.kind || now.Sub(r.at) >= failRepeat {
		r.kind, r.at = k, now
		return true
	}
	return false
}

// digits are the figures failKind masks.
var digits = regexp.MustCompile(`[0-9]+`)

// failKind is err's message with its figures masked: the same failure
// names a moving span (the history's ends, how much of it the data
// covers, serve's clock), so its message changes at every run, and once
// told apart by the message, a target with too little history (tuned
// every 15 minutes until it has an hour) or a result file stamped ahead
// of serve's clock (read every minute) was said at each run.
func failKind(err error) string {
	return digits.ReplaceAllLiteralString(err.Error(), "#")
}

// clear forgets the last message (the operation succeeded): its next
// failure is said at its level.
func (r *repeated) clear() { r.kind = "" }

// Tuning is serve's self-tuning of the targets with a tune: block. Its
// Run re-tunes each such target every tune.every on its own Prometheus
// history (tune.TuneTarget, on Workers cores) in one loop, and in
// another reads the targets' result files from tune.dir and checks the
// adopted candidates' live misses; the decision cycle only takes the
// result under a mutex held for a map lookup, so tuning never delays a
// cycle. Every cycle the candidate decides on the same observation as the
// live policy (infscale_candidate_desired_replicas); in adopt mode a
// candidate that holds becomes the target's policy (at most once per
// every, an audit line), and is reverted when its live TTFT misses since
// the switch exceed max_miss.
type Tuning struct {
	// API reads the history and the live TTFT histogram (nil: only
	// tune.dir results are read, and nothing is reverted).
	API promql.API
	// Period is serve's decision interval (the replayed period).
	Period time.Duration
	// Options are the tuning runs' (Period and Workers default to
	// Period and 1).
	Options tune.TargetOptions
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Log receives the tuning runs' outcomes and errors.
	Log *slog.Logger
	// Tick is how often Run looks for a due target [1 min]; CheckEvery
	// how often an adopted candidate's live misses are read [5 min].
	Tick, CheckEvery time.Duration
	// LookBackTimeout bounds lookBack's query, which a target's first
	// result waits for in adopt mode [10 s, the decisions' default
	// prometheus.timeout].
	LookBackTimeout time.Duration
	// Audit, when set, receives the adopt and revert events (Loop's
	// audit log).
	Audit func(target string, at time.Time, event any)
	// StateDir, when set (serve --state-dir), keeps each target's last
	// result and what serve did with it (adopted, reverted, when, the
	// last run) in StateDir/tune/NAME.json, read back when the target is
	// first configured: a restart keeps an adopted candidate deciding and
	// a reverted one reverted, and the limit of one switch per every.
	StateDir string
	// Size, when set, sizes a run's replays to the process's memory, as
	// tune --shard's are (fewer at once than Options.Workers, or a lowered
	// backlog bound): n replays at once, each of pools pools, search when
	// one searches (never in a tuning run), over a trace of requests()
	// requests, saying why on w when that costs something;
	// what it writes is logged as a warning naming the target. Without
	// it a run of a busy target's week could take more than a small
	// serve's memory limit and have the process, decisions with it,
	// OOM-killed. Ignored when Options.Size is set.
	Size func(w io.Writer, n, pools int, search bool, requests func() int64) replay.Sizing
	// SeriesLabels are the labels Prometheus's scrape gives this serve's
	// series (prometheus.series_labels), matched beside target when the
	// revert is read back (infscale_tuned_policy_info, _reverted); nil:
	// target alone.
	SeriesLabels map[string]string

	mu     sync.Mutex
	saveMu sync.Mutex // one save at a time
	// period is serve's interval as last configured (setTargets; 0:
	// Period).
	period  time.Duration
	targets map[string]*tuned
	dirty   map[string]bool // targets whose StateDir file is behind
	// forgotten are configured targets whose tune: block a reload (or the
	// config serve started with) took away: their StateDir file is
	// removed at the next save, so that a block given back starts afresh
	// rather than restoring what was rolled back.
	forgotten map[string]bool
	// looked are the targets whose last exported state was looked up in
	// Prometheus (lookBack), once per process; lookingBack counts the
	// look-ups under way.
	looked      map[string]bool
	lookingBack sync.WaitGroup
	untuned     map[string]bool // configured without a tune: block, as last set
	candidate   *prometheus.GaugeVec
	info        *prometheus.GaugeVec
	revertedVec *prometheus.GaugeVec
	errorsVec   *prometheus.CounterVec // failed runs and tune.dir reads
	lastOK      *prometheus.GaugeVec   // the last run's (or tune.dir read's) outcome
}

// tuned is one target's self-tuning state.
type tuned struct {
	cfg  config.Target
	live recommend.Policy
	// res is the last result; cand its candidate on the live policy.
	res  *tune.TargetResult
	cand *recommend.Policy
	run  recommend.Decider
	// adopted is the policy deciding the target (nil: the configured
	// one), adoptedRes the result it is the candidate of (res, or an
	// earlier one when a later result was not adopted): adapt rebuilds
	// adopted from it at each reload.
	adopted    *recommend.Policy
	adoptedRes *tune.TargetResult
	adoptedAt  time.Time
	// reverted is the last policy reverted for its live misses: not
	// adopted again while the tune: block's terms stay (setReverted);
	// revertedTerms the terms of its infscale_tuned_policy_reverted.
	reverted, revertedTerms string
	// lookingBack: lookBack is reading what serve exported before this
	// start; adoption waits for it.
	lookingBack      bool
	switched         time.Time
	state            string
	lastRun, checked time.Time
	running          bool
	// failures counts the in-process runs failed in a row since the last
	// that succeeded (retryDelay); kept in StateDir with lastRun, so that
	// a restart neither runs at once nor backs off afresh.
	failures int
	// runFail is the last run failure logged at its level (a tune.dir
	// file refused, read every minute); checkFail the last live-miss read
	// failure (tried again each minute while it fails).
	runFail, checkFail repeated
	// straddled is the TTFT bucket (lo, hi] last said to hold slo_ttft
	// inside it (said once per bucket: the histogram as scraped).
	straddled [2]float64
	// oldLogged is when a tune.dir result older than staleResults
	// every was last said to be (once per failRepeat while it lasts).
	oldLogged time.Time
	// slowWarned is the tune.every a run was last said to take as long
	// as or longer (once per target and every: runs go back to back).
	slowWarned        time.Duration
	infoPolicy        string
	infoState         string
	infoTerms         string
	hasCandidateGauge bool
}

// NewTuning registers infscale_candidate_desired_replicas,
// infscale_tuned_policy_info, infscale_tuned_policy_reverted,
// infscale_tuning_errors_total and infscale_tuning_last_run_successful on
// reg.
func NewTuning(reg prometheus.Registerer) *Tuning {
	t := &Tuning{
		targets: map[string]*tuned{}, dirty: map[string]bool{}, forgotten: map[string]bool{}, looked: map[string]bool{},
		candidate: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "candidate_desired_replicas",
			Help: "The tuned candidate policy's desired replicas, decided each cycle on the same observation as infscale_desired_replicas (targets with a tune: block, once a candidate exists)."}, []string{"target"}),
		info: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "tuned_policy_info",
			Help: "1 for a target's last tuned candidate: policy is its simulate --policy string, state shadow, adopted, reverted or rejected, terms a digest of the terms it is judged on (max_miss, slo_ttft, interval, replica, scale to zero)."}, []string{"target", "policy", "state", "terms"}),
		revertedVec: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "tuned_policy_reverted",
			Help: "1 for the policy serve keeps reverted for a target (its live SLO misses exceeded max_miss; not adopted again under these terms), whatever the target's candidate is now; terms as infscale_tuned_policy_info's."}, []string{"target", "policy", "terms"}),
		errorsVec: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: Namespace, Name: "tuning_errors_total",
			Help: "Failed tuning runs of a target with a tune: block (in process, or its tune.dir result refused), each time, though logged once; too little history (a new target) is not counted."}, []string{"target"}),
		lastOK: prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: Namespace, Name: "tuning_last_run_successful",
			Help: "0 while the last tuning run of a target with a tune: block failed (in process, or its tune.dir result refused; a failing in-process run is retried hours apart; from the start when --state-dir kept the failures of the config running), 1 otherwise: from its start, after a run that succeeded or found too little history."}, []string{"target"}),
	}
	reg.MustRegister(t.candidate, t.info, t.revertedVec, t.errorsVec, t.lastOK)
	return t
}

func (tn *Tuning) now() time.Time {
	if tn.Now != nil {
		return tn.Now()
	}
	return time.Now()
}

func (tn *Tuning) logger() *slog.Logger {
	if tn.Log != nil {
		return tn.Log
	}
	return slog.New(slog.DiscardHandler)
}

// setTargets follows a (re)loaded config, whose interval is period:
// targets with a tune: block keep their state when their name stays and
// their result was tuned for their config as it is now (Matches: the same
// max_miss, slo_ttft, period and replica); a result from before a change
// of these is dropped, its candidate's series with it, and an adopted one
// hands the target back to its configured policy. A target first seen
// takes its state from StateDir. The others' series are removed; a target
// still configured without its tune: block (the documented roll-back) has
// its StateDir file removed too, so that giving the block back does not
// restore the candidate rolled back (an adopted one decided again from
// the first cycle, with no audit line).
func (tn *Tuning) setTargets(ts []*target, period time.Duration) {
	if tn == nil {
		return
	}
	saved := tn.loadSaved(ts) // outside mu: file reads
	tn.mu.Lock()
	defer tn.mu.Unlock()
	if period > 0 {
		tn.period = period
	}
	keep, untuned := map[string]bool{}, map[string]bool{}
	for _, t := range ts {
		if t.cfg.Tune == nil {
			// Newly without a block (at start, or a reload took it
			// away): its file, if any, goes at the next save.
			if untuned[t.cfg.Name] = true; tn.StateDir != "" && !tn.untuned[t.cfg.Name] {
				tn.forgotten[t.cfg.Name] = true
			}
			continue
		}
		keep[t.cfg.Name] = true
		// At 0 from the start, so that increase() sees the first failure.
		tn.errorsVec.WithLabelValues(t.cfg.Name)
		s, ok := tn.targets[t.cfg.Name]
		if !ok {
			s = &tuned{}
			tn.targets[t.cfg.Name] = s
			tn.lastOK.WithLabelValues(t.cfg.Name).Set(1)
		}
		modeChanged := ok && s.cfg.Tune.Mode != t.cfg.Tune.Mode
		if ok && s.failures > 0 && !reflect.DeepEqual(s.cfg, t.cfg) {
			// The target changed under runs that failed (its history,
			// its queries: the operator's fix): tried at the next look,
			// its back-off afresh (retryDelay), not hours later.
			s.failures, s.lastRun = 0, time.Time{}
			tn.dirty[t.cfg.Name] = true
		}
		s.cfg, s.live = t.cfg, t.policy
		if sv := saved[t.cfg.Name]; !ok && sv != nil {
			modeChanged = tn.restore(s, sv) && sv.Mode != t.cfg.Tune.Mode
		}
		if s.res != nil {
			if err := s.res.Matches(&s.cfg, tn.replayPeriod()); err != nil {
				tn.logger().Warn("tuned candidate dropped: it was tuned for another max_miss, slo_ttft, interval, replica or scale to zero; the configured policy decides until a new result", "target", s.cfg.Name, "policy", s.res.Policy,
					"adopted", s.adopted != nil, "err", err)
				tn.drop(s)
			}
		}
		if a := s.adoptedRes; a != nil && a != s.res {
			if err := a.Matches(&s.cfg, tn.replayPeriod()); err != nil {
				tn.logger().Warn("adopted candidate handed back: it was tuned for another max_miss, slo_ttft, interval, replica or scale to zero; the configured policy decides", "target", s.cfg.Name, "policy", a.Policy, "err", err)
				s.adopted, s.adoptedRes = nil, nil
				tn.dirty[s.cfg.Name] = true
			}
		}
		switch {
		case s.res != nil && modeChanged:
			// shadow -> adopt adopts the candidate at hand if it holds;
			// adopt -> shadow hands the target back to its policy.
			s.adopted, s.adoptedRes = nil, nil
			tn.apply(s, s.res, tn.now())
			tn.dirty[s.cfg.Name] = true
		case s.res != nil:
			tn.adapt(s)
		}
		if s.infoPolicy != "" && s.infoTerms != tune.Terms(&s.cfg, tn.replayPeriod()) {
			tn.setInfo(s, s.infoPolicy, s.infoState) // the same state under the terms now
		}
		if s.reverted != "" && s.revertedTerms != tune.Terms(&s.cfg, tn.replayPeriod()) {
			tn.setReverted(s, s.reverted)
		}
	}
	tn.untuned = untuned
	for name, s := range tn.targets {
		if !keep[name] {
			tn.candidate.DeleteLabelValues(name)
			tn.errorsVec.DeleteLabelValues(name)
			tn.lastOK.DeleteLabelValues(name)
			if s.infoPolicy != "" {
				tn.info.DeleteLabelValues(name, s.infoPolicy, s.infoState, s.infoTerms)
			}
			tn.setReverted(s, "")
			delete(tn.targets, name)
		}
	}
}

// tuneSaved is a target's tuning state in StateDir/tune/NAME.json.
type tuneSaved struct {
	// Target is the target's name (a file with no Result is checked
	// against it).
	Target string `json:"target,omitempty"`
	// Result is the last result taken (tune.TargetResult's JSON); nil
	// when no run has succeeded yet and the file keeps only a failed
	// run's LastRun and Failures.
	Result *tune.TargetResult `json:"result"`
	// Mode is the tune.mode it was saved under; State the
	// infscale_tuned_policy_info state.
	Mode  config.TuneMode `json:"mode"`
	State string          `json:"state"`
	// Adopted is the adopted result (nil: the configured policy
	// decides), AdoptedAt when it was adopted, Switched the last adopt or
	// revert, LastRun the last in-process run's start; after a failed
	// run, its retry time less tune.every (the next run is due at
	// LastRun + every, as after a success).
	Adopted   *tune.TargetResult `json:"adopted,omitempty"`
	AdoptedAt time.Time          `json:"adopted_at,omitzero"`
	// Reverted is the last policy reverted for its live misses.
	Reverted string    `json:"reverted,omitempty"`
	Switched time.Time `json:"switched,omitzero"`
	LastRun  time.Time `json:"last_run,omitzero"`
	// Failures counts the in-process runs failed in a row (retryDelay's
	// failures), Config the digest (targetDigest) of the target's config
	// when saved: a restart with another config (the operator's fix; the
	// chart restarts serve on a config change) tries a target whose runs
	// failed (or, without a result, found too little history) at once,
	// its back-off afresh, as a reload that changes it does; a LastRun
	// shifted by the old every is not read against a new one.
	Failures int    `json:"failures,omitempty"`
	Config   string `json:"config,omitempty"`
}

// targetDigest is the first 16 hex digits of the SHA-256 of t's JSON
// encoding: what a restart compares to tell a changed target from the one
// its runs failed under ("" when t does not encode).
func targetDigest(t *config.Target) string {
	b, err := json.Marshal(t)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:8])
}

// failedUnder reports whether digest (a tuneSaved's Config) is t's: a
// target that does not encode is never the same (tried at once).
func failedUnder(digest string, t *config.Target) bool {
	return digest != "" && digest == targetDigest(t)
}

// savedPath is target name's file under StateDir.
func (tn *Tuning) savedPath(name string) string {
	return filepath.Join(tn.StateDir, "tune", name+".json")
}

// loadSaved reads the StateDir files of the targets of ts with a tune:
// block that tn does not know yet (first configured: at startup, or added
// by a reload). A file that cannot be read or decoded is logged and the
// target starts afresh; the bytes of one read but refused are copied to
// NAME.json.refused (keepRefused).
func (tn *Tuning) loadSaved(ts []*target) map[string]*tuneSaved {
	if tn.StateDir == "" {
		return nil
	}
	var names []string
	tn.mu.Lock()
	for _, t := range ts {
		// A forgotten target's file is the state rolled back (its
		// removal pending): the block given back starts afresh.
		if _, ok := tn.targets[t.cfg.Name]; !ok && t.cfg.Tune != nil && !tn.forgotten[t.cfg.Name] {
			names = append(names, t.cfg.Name)
		}
	}
	tn.mu.Unlock()
	out := map[string]*tuneSaved{}
	for _, name := range names {
		path := tn.savedPath(name)
		b, err := boundedfile.Read(path, 2*tune.MaxResultSize, "a tuning state file", "want the file serve writes under --state-dir/tune")
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		var sv tuneSaved
		if err == nil {
			if err = json.Unmarshal(b, &sv); err == nil && (sv.Result == nil && (sv.Target != name || sv.LastRun.IsZero()) || sv.Result != nil && sv.Result.Target != name) {
				err = fmt.Errorf("%s: not the tuning state of target %s", path, name)
			} else if err != nil {
				err = fmt.Errorf("%s: %w", path, err)
			}
			if err != nil {
				// Read but refused: the target's next save overwrites
				// it (a newer infscale's file after a rollback).
				err = keepRefused(path, b, err)
			}
		}
		if err != nil {
			tn.logger().Warn("tuning state not restored; the target starts without a candidate", "target", name, "err", err)
			continue
		}
		out[name] = &sv
	}
	return out
}

// restore takes s's saved state (under mu; s.cfg and s.live set): its
// result when it was tuned for s's config as it is now (Matches), its
// state, its adopted candidate while the mode is still adopt, and its
// switch and run times; the failed runs' back-off (lastRun, failures)
// while the target is the one they failed under. It reports whether the
// result was taken.
func (tn *Tuning) restore(s *tuned, sv *tuneSaved) bool {
	if sv.Result == nil {
		// Only failed runs so far (or too little history): due at their
		// retry, under the config they ran under.
		if failedUnder(sv.Config, &s.cfg) {
			s.lastRun, s.failures = sv.LastRun, sv.Failures
			tn.restoredFailures(s)
		}
		return false
	}
	if err := sv.Result.Matches(&s.cfg, tn.replayPeriod()); err != nil {
		tn.logger().Warn("tuning state not restored: its result was tuned for another configuration", "target", s.cfg.Name, "err", err)
		return false
	}
	s.res, s.switched, s.lastRun = sv.Result, sv.Switched, sv.LastRun
	if sv.Failures > 0 {
		if failedUnder(sv.Config, &s.cfg) {
			s.failures = sv.Failures
			tn.restoredFailures(s)
		} else {
			s.lastRun = time.Time{} // changed since its runs failed: tried at once
		}
	}
	tn.setReverted(s, sv.Reverted)
	if a := sv.Adopted; a != nil && sv.Mode == config.TuneAdopt && s.cfg.Tune.Mode == config.TuneAdopt && a.Matches(&s.cfg, tn.replayPeriod()) == nil {
		s.adoptedRes, s.adoptedAt = a, sv.AdoptedAt
	}
	tn.adapt(s)
	if s.cand == nil {
		return true // rejected (adapt)
	}
	state := sv.State
	if state == TuneStateAdopted && (s.adoptedRes == nil || s.adoptedRes.Policy != s.res.Policy) {
		state = TuneStateShadow
	}
	tn.setInfo(s, s.res.Policy, state)
	tn.logger().Info("tuning state restored", "target", s.cfg.Name, "policy", s.res.Policy, "state", state, "tuned_at", s.res.At)
	return true
}

// restoredFailures says s's back-off taken from StateDir (under mu) and,
// when runs failed in a row before the restart, sets
// infscale_tuning_last_run_successful to 0: the last run failed, and
// InfscaleTuningErrors goes on firing until one succeeds.
func (tn *Tuning) restoredFailures(s *tuned) {
	if s.failures == 0 {
		return
	}
	tn.lastOK.WithLabelValues(s.cfg.Name).Set(0)
	tn.logger().Info("tuning back-off restored", "target", s.cfg.Name, "failures", s.failures, "due", s.lastRun.Add(time.Duration(s.cfg.Tune.Every)))
}

// writeTuneState is save's write of a tune/NAME.json, durable
// (atomicfile.WriteDurable: the data synced before the rename, the
// directory after it): a plain atomic write may leave an empty file after
// a node crash on some file systems, which the next start refuses, so the
// target would start without its candidate, its adoption, its revert
// (the policy its live misses reverted, adopted again) and its last run
// (a run at once). Written when a target's tuning state changes (a run,
// an adopt or a revert), not every cycle, so the sync costs nothing that
// matters. A variable for the test that it is the durable one.
var writeTuneState = atomicfile.WriteDurable

// mkdirTuneState creates tune/ before its first NAME.json with the state
// dir synced after (atomicfile.MkdirDurable): the file's own syncs reach
// tune/, not the state dir's entry naming it, so after a node crash the
// first file could be lost with its new directory. A variable for the
// test that it is the durable one.
var mkdirTuneState = atomicfile.MkdirDurable

// removeTuneState removes tune/NAME.json with its directory synced after
// (atomicfile.RemoveDurable): the file goes when its target's result is
// dropped or its tune: block removed, and one brought back by a crash
// would restore at the next start the candidate or adoption it had
// dropped. A variable for the test that it is the durable one.
var removeTuneState = atomicfile.RemoveDurable

// save writes the files of the targets marked dirty (snapshots taken
// under mu, written outside it). A failed write is logged; the target
// stays marked and is written again at the next save.
func (tn *Tuning) save() {
	if tn.StateDir == "" {
		return
	}
	type file struct {
		name   string
		sv     tuneSaved
		forget bool // a forgotten target's file, removed
	}
	// One save at a time (Run's two loops): the files are written in
	// the order their snapshots were taken.
	tn.saveMu.Lock()
	defer tn.saveMu.Unlock()
	var files []file
	tn.mu.Lock()
	for name := range tn.forgotten {
		delete(tn.forgotten, name)
		if tn.dirty[name] && tn.targets[name] != nil {
			continue // given back and changed since: written below
		}
		files = append(files, file{name: name, forget: true})
	}
	for name := range tn.dirty {
		s := tn.targets[name]
		delete(tn.dirty, name)
		if s == nil {
			continue
		}
		sv := tuneSaved{Target: name, Result: s.res, Mode: s.cfg.Tune.Mode, State: s.state, Adopted: s.adoptedRes,
			AdoptedAt: s.adoptedAt, Reverted: s.reverted, Switched: s.switched, LastRun: s.lastRun, Failures: s.failures, Config: targetDigest(&s.cfg)}
		files = append(files, file{name: name, sv: sv})
	}
	tn.mu.Unlock()
	for _, f := range files {
		path := tn.savedPath(f.name)
		var err error
		if f.sv.Result == nil && f.sv.LastRun.IsZero() { // dropped: nothing to restore
			err = removeTuneState(path) // a missing file is no error
		} else {
			var b []byte
			if b, err = json.MarshalIndent(f.sv, "", "  "); err == nil {
				if err = mkdirTuneState(filepath.Dir(path)); err == nil {
					err = writeTuneState(path, append(b, '\n'))
				}
			}
		}
		switch {
		case err != nil && f.forget:
			tn.logger().Warn("tuning state of a target without a tune: block not removed; the block given back would restore it", "target", f.name, "err", err)
			tn.mu.Lock()
			tn.forgotten[f.name] = true
			tn.mu.Unlock()
		case err != nil:
			tn.logger().Warn("tuning state not saved; a restart would forget it", "target", f.name, "err", err)
			tn.mu.Lock()
			tn.dirty[f.name] = true
			tn.mu.Unlock()
		}
	}
}

// drop forgets s's result (under mu): no candidate, no series, the
// configured policy deciding, and (in process) a run at the next look.
func (tn *Tuning) drop(s *tuned) {
	tn.candidate.DeleteLabelValues(s.cfg.Name)
	if s.infoPolicy != "" {
		tn.info.DeleteLabelValues(s.cfg.Name, s.infoPolicy, s.infoState, s.infoTerms)
	}
	s.res, s.cand, s.adopted, s.adoptedRes = nil, nil, nil, nil
	tn.setReverted(s, "")
	s.infoPolicy, s.infoState, s.infoTerms, s.state, s.hasCandidateGauge = "", "", "", "", false
	s.lastRun, s.failures = time.Time{}, 0
	tn.dirty[s.cfg.Name] = true
}

// replayPeriod is the period tuning replays at (under mu): serve's
// interval as last configured, else Period.
func (tn *Tuning) replayPeriod() time.Duration {
	if tn.period > 0 {
		return tn.period
	}
	return tn.Period
}

// adapt rebuilds s's candidate, and its adopted policy, on its live
// policy (after a new result or a config reload). A candidate the live
// policy cannot take is dropped: its series go and it is rejected. An
// adopted one it cannot take hands the target back to its configured
// policy: built on the config before, it would go on deciding as if the
// reload had not happened.
func (tn *Tuning) adapt(s *tuned) {
	p, err := s.res.Candidate.Adapt(s.live)
	if err != nil {
		tn.logger().Error("tuned candidate not usable on the target's policy", "target", s.cfg.Name, "policy", s.res.Policy, "err", err)
		s.cand = nil
		tn.candidate.DeleteLabelValues(s.cfg.Name)
		tn.setInfo(s, s.res.Policy, TuneStateRejected)
		tn.dirty[s.cfg.Name] = true
	} else {
		s.cand = &p
	}
	a := s.adoptedRes
	switch {
	case a == nil:
		return
	case a.Policy == s.res.Policy && s.cand != nil:
		s.adopted = s.cand
		return
	case a.Policy != s.res.Policy:
		q, err := a.Candidate.Adapt(s.live)
		if err == nil {
			s.adopted = &q
			return
		}
		tn.logger().Error("adopted candidate not usable on the target's policy", "target", s.cfg.Name, "policy", a.Policy, "err", err)
	}
	tn.logger().Warn("adopted candidate handed back: the configured policy decides", "target", s.cfg.Name, "policy", a.Policy)
	s.adopted, s.adoptedRes = nil, nil
	tn.dirty[s.cfg.Name] = true
}

// policyFor is the policy deciding target name this cycle: the adopted
// candidate, or live.
func (tn *Tuning) policyFor(name string, live *recommend.Policy) *recommend.Policy {
	if tn == nil {
		return live
	}
	tn.mu.Lock()
	defer tn.mu.Unlock()
	if s := tn.targets[name]; s != nil && s.adopted != nil {
		return s.adopted
	}
	return live
}

// shadow decides the candidate on the cycle's reading, with the current
// replicas the live decision worked from, and exports it.
func (tn *Tuning) shadow(name string, r recommend.Reading, current int, now time.Time) {
	if tn == nil {
		return
	}
	tn.mu.Lock()
	defer tn.mu.Unlock()
	s := tn.targets[name]
	if s == nil || s.cand == nil {
		return
	}
	r.Obs.Current, r.CurrentKnown, r.SpecFollows = current, true, false
	s.run.Quiet = true
	var d recommend.Decision
	if decided, _ := s.run.Decide(&d, s.cand, r, now); decided {
		tn.candidate.WithLabelValues(name).Set(float64(d.Desired))
		s.hasCandidateGauge = true
	}
}

// tick is how often Run looks for a due target: Tick, else a minute.
func (tn *Tuning) tick() time.Duration {
	if tn.Tick > 0 {
		return tn.Tick
	}
	return time.Minute
}

// Run re-tunes the due targets every Tick until ctx ends, in two
// loops: one runs the in-process tunings, one target after the other
// (minutes each, on one core); the other reads the tune.dir results and
// checks the adopted candidates' live misses, so that neither waits for
// the in-process runs of other targets (in one loop a revert would wait
// for every run due: an hour with 60 targets of a minute each).
func (tn *Tuning) Run(ctx context.Context) {
	tick := tn.tick()
	loop := func(step func(context.Context)) {
		t := time.NewTicker(tick)
		defer t.Stop()
		for {
			step(ctx)
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
		}
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		defer crashlog.Handle(tn.logger())
		loop(tn.stepRuns)
	}()
	loop(tn.stepFast)
	<-done
}

// stepRuns tunes the due in-process targets, one after the other.
func (tn *Tuning) stepRuns(ctx context.Context) {
	for _, j := range tn.due(false) {
		tn.run(ctx, j)
	}
	tn.save()
}

// stepFast reads the tune.dir targets' results and checks the adopted
// candidates' live misses.
func (tn *Tuning) stepFast(ctx context.Context) {
	for _, j := range tn.due(true) {
		tn.run(ctx, j)
	}
	now := tn.now()
	every := tn.CheckEvery
	if every <= 0 {
		every = 5 * time.Minute
	}
	var check []tuneJob
	type old struct {
		name, policy, dir string
		at                time.Time
		every             time.Duration
	}
	var olds []old
	tn.mu.Lock()
	for name, s := range tn.targets {
		// A tune.dir result far older than every: the CronJob missed its
		// runs, and nothing else would say so (serve keeps the last one).
		if runEvery := time.Duration(s.cfg.Tune.Every); s.res != nil && s.cfg.Tune.Dir != "" && now.Sub(s.res.At) > staleResults*runEvery && now.Sub(s.oldLogged) >= failRepeat {
			s.oldLogged = now
			olds = append(olds, old{name, s.res.Policy, s.cfg.Tune.Dir, s.res.At, runEvery})
		}
		// A candidate that held but came within every of the last switch
		// waits in shadow; once every has passed it is adopted (it
		// waited for a newer result, a day with a daily CronJob that ran
		// a little faster than the day before).
		if s.res != nil && s.state == TuneStateShadow && s.cfg.Tune.Mode == config.TuneAdopt && now.Sub(s.switched) >= time.Duration(s.cfg.Tune.Every) {
			tn.apply(s, s.res, now)
			tn.dirty[name] = true
		}
		if s.adopted != nil && now.Sub(s.checked) >= every && now.Sub(s.adoptedAt) >= every {
			check = append(check, tuneJob{name, s.cfg})
		}
	}
	tn.mu.Unlock()
	for _, o := range olds {
		// The file rewritten since (within twice every, its time not
		// ahead of serve's clock): the CronJob runs, and its history ends
		// there (a scale-to-zero target at zero has no newer series).
		if fi, err := os.Stat(tune.ResultPath(o.dir, o.name)); err == nil && !fi.ModTime().After(now.Add(maxClockSkew)) && now.Sub(fi.ModTime()) <= staleResults*o.every {
			continue
		}
		tn.logger().Warn("tuning result is old: no newer one came from infscale tune --shard (the CronJob) for over twice tune.every; is it running? The target goes on with this one", "target", o.name, "policy", o.policy,
			"tuned_at", o.at.UTC().Format(time.RFC3339), "age", now.Sub(o.at).Round(time.Minute), "every", model.Duration(o.every))
	}
	for _, j := range check {
		tn.check(ctx, j.name, &j.cfg, tn.now())
	}
	tn.save()
}

// tuneJob is a target to tune or check, with its config as it was then.
type tuneJob struct {
	name string
	cfg  config.Target
}

// due marks running and returns the targets due now: with dir, the
// tune.dir targets (a file read, looked for every time); else the
// in-process targets whose last run is tune.every old or that have none.
func (tn *Tuning) due(dir bool) []tuneJob {
	now := tn.now()
	var due []tuneJob
	tn.mu.Lock()
	defer tn.mu.Unlock()
	for name, s := range tn.targets {
		if s.running || (s.cfg.Tune.Dir != "") != dir {
			continue
		}
		if dir || s.lastRun.IsZero() || now.Sub(s.lastRun) >= time.Duration(s.cfg.Tune.Every) {
			s.running = true
			due = append(due, tuneJob{name, s.cfg})
		}
	}
	return due
}

// run tunes (or reads the result of) one due target and takes its
// result; a failure is logged with when it is tried again.
func (tn *Tuning) run(ctx context.Context, j tuneJob) {
	start := tn.now() // the history ends here; the next run is every later
	res, err := tn.result(ctx, &j.cfg, start)
	if err == nil && res != nil {
		tn.lookBack(ctx, j, start)
	}
	var stale error
	loud := err != nil
	// An in-process run as long as its every or longer has the next due
	// as it ends; one that failed is warned of too, since it will be as
	// long when it succeeds (its own retry waits retryDelay after it). Measured against the job's every, the one it ran
	// under: a reload during the run does not change how long it took
	// against it. Not for a run serve's stop cut short.
	var slow, slowEvery time.Duration
	if every, took := time.Duration(j.cfg.Tune.Every), tn.now().Sub(start); j.cfg.Tune.Dir == "" && every > 0 && took >= every && ctx.Err() == nil {
		slow, slowEvery = took, every
	}
	end := tn.now()
	var retry time.Duration // an in-process failure's, under mu
	failures := 0
	tn.mu.Lock()
	if s := tn.targets[j.name]; s != nil {
		s.running = false
		switch {
		case slow > 0 && s.slowWarned == slowEvery:
			slow = 0 // said once per target and every
		case slow > 0:
			s.slowWarned = slowEvery
		}
		if err == nil {
			s.runFail.clear()
		} else {
			loud = s.runFail.loud(err, start)
		}
		switch {
		case err == nil || errors.Is(err, tune.ErrShortHistory):
			tn.lastOK.WithLabelValues(j.name).Set(1)
		case ctx.Err() == nil: // not a run serve's stop cut short
			tn.lastOK.WithLabelValues(j.name).Set(0)
			tn.errorsVec.WithLabelValues(j.name).Inc()
		}
		switch every := time.Duration(s.cfg.Tune.Every); {
		case err == nil:
			s.lastRun, s.failures = start, 0
		case ctx.Err() == nil && s.cfg.Tune.Dir == "" && !reflect.DeepEqual(j.cfg, s.cfg):
			// A reload changed the target during the run (setTargets):
			// the failure is the replaced config's, not counted against
			// the new one, which is tried at the next look.
			s.lastRun, retry, failures = time.Time{}, tn.tick(), s.failures
			tn.dirty[j.name] = true
		case ctx.Err() == nil && s.cfg.Tune.Dir == "":
			if errors.Is(err, tune.ErrShortHistory) {
				retry = min(every, tuneRetry)
			} else {
				s.failures++
				retry = retryDelay(s.failures, every)
			}
			failures = s.failures
			s.lastRun = end.Add(retry - every) // due again retry after the end
			tn.dirty[j.name] = true            // kept over a restart (StateDir)
		}
		if err == nil && res != nil {
			// A reload during the run may have changed the terms it was
			// tuned on (j.cfg): such a result is not taken, and an
			// in-process target is tuned again at the next look.
			stale = res.Matches(&s.cfg, tn.replayPeriod())
		}
		if stale != nil {
			s.lastRun = time.Time{}
			tn.dirty[j.name] = true // its failures, if any, ended too
		} else if err == nil && res != nil {
			// Adopted when the run ends, not when it began: an in-process
			// run takes minutes, during which the configured policy
			// decided (its misses are not the candidate's).
			tn.apply(s, res, tn.now())
			tn.dirty[j.name] = true
		}
	} else {
		slow = 0 // removed by a reload during the run: no next run
	}
	tn.mu.Unlock()
	if slow > 0 {
		tn.logger().Warn("tuning run took tune.every or longer: the target's runs go back to back (the next starts as one ends; one that failed is tried again after its back-off), on one core, each delaying the other targets' runs; raise tune.every, shorten tune.history, or tune with infscale tune --shard into tune.dir (said once per target and every)",
			"target", j.name, "took", slow.Round(time.Second), "every", model.Duration(slowEvery), "failed", err != nil)
	}
	if stale != nil {
		tn.logger().Warn("tuning result not used: a reload changed the target's terms during the run; tuned again at the next look", "target", j.name, "policy", res.Policy, "err", stale)
	}
	if err != nil && ctx.Err() == nil {
		if retry == 0 { // removed by a reload during the run: its first retry's, as before
			retry = min(time.Duration(j.cfg.Tune.Every), tuneRetry)
		}
		if j.cfg.Tune.Dir != "" { // a dir: is looked at every Tick
			retry = tn.tick()
		}
		switch {
		case !loud:
			tn.logger().Debug("tuning failed as before; the target keeps its policy", "target", j.name, "err", err, "failures", failures, "retry_in", retry)
		case errors.Is(err, tune.ErrShortHistory): // a new target: nothing is wrong
			tn.logger().Info("target not tuned yet: too little history; the target keeps its policy", "target", j.name, "err", err, "retry_in", retry)
		default:
			tn.logger().Error("tuning failed; the target keeps its policy", "target", j.name, "err", err, "failures", failures, "retry_in", retry)
		}
	}
}

// revertLookBack is how far back lookBack reads serve's own
// infscale_tuned_policy_info: a restart, or a pod rescheduled, within it
// keeps a revert.
const revertLookBack = 24 * time.Hour

// lookBack restores, without --state-dir, a revert from what serve last
// exported for the target in Prometheus, once per target and process,
// before its first result is taken in adopt mode: the series of
// infscale_tuned_policy_info (any serve replica's) with the latest sample
// in the last revertLookBack. When that one says reverted, its policy
// stays reverted, switched at the start of its last run of samples; else
// the policy of the latest infscale_tuned_policy_reverted series stays
// reverted (one reverted beside a later candidate). Either only under
// the terms it was reverted under (a reload that changes them forgets
// it). A
// restart forgot the revert, and the same result was adopted again and
// missed again; with several serve replicas, one restarted adopted what
// the others had reverted. The query runs on its own goroutine, so a
// Prometheus that hangs holds no other target's result; the target's
// waits in shadow until it is answered, or fails (LookBackTimeout): then
// it is taken as before.
func (tn *Tuning) lookBack(ctx context.Context, j tuneJob, now time.Time) {
	if tn.StateDir != "" || tn.API == nil || j.cfg.Tune.Mode != config.TuneAdopt {
		return
	}
	tn.mu.Lock()
	defer tn.mu.Unlock()
	s := tn.targets[j.name]
	if tn.looked[j.name] || s == nil || s.reverted != "" || s.adoptedRes != nil {
		return
	}
	tn.looked[j.name] = true
	s.lookingBack = true
	period := tn.replayPeriod()
	tn.lookingBack.Add(1)
	timeout := tn.LookBackTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	go func() {
		defer tn.lookingBack.Done()
		defer crashlog.Handle(tn.logger())
		ctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		policy, since, terms, err := lastReverted(ctx, tn.API, j.name, tn.SeriesLabels, now, period)
		if err == nil && policy == "" {
			// Reverted while a later result of another policy was the
			// candidate (infscale_tuned_policy_info on that one), or
			// before another policy was adopted: kept all the same.
			policy, terms, err = keptReverted(ctx, tn.API, j.name, tn.SeriesLabels, now, period)
		}
		if err != nil {
			tn.logger().Warn("tuning state not read back from Prometheus; a candidate reverted before serve started may be adopted again", "target", j.name, "err", err)
		}
		tn.mu.Lock()
		defer tn.mu.Unlock()
		if s.lookingBack = false; tn.targets[j.name] != s {
			return // the target was dropped or reconfigured meanwhile
		}
		if now := tune.Terms(&s.cfg, tn.replayPeriod()); policy != "" && terms != "" && terms != now {
			// As a reload that changes the terms forgets a revert: the
			// chart restarts serve on a config change.
			tn.logger().Info("tuned policy revert not kept: serve reverted it before this start under other terms (max_miss, slo_ttft, interval, replica or scale to zero)", "target", j.name, "policy", policy, "since", since.UTC().Format(time.RFC3339), "terms", terms, "terms_now", now)
			policy = ""
		}
		if policy != "" && s.reverted == "" && s.adoptedRes == nil {
			tn.setReverted(s, policy)
			args := []any{"target", j.name, "policy", policy}
			if !since.IsZero() { // the info series' revert: the last switch
				s.switched = since
				args = append(args, "since", since.UTC().Format(time.RFC3339))
			}
			tn.logger().Info("tuned policy stays reverted: serve exported it reverted before this start (read back from Prometheus)", args...)
		}
		if s.res != nil && s.state == TuneStateShadow && s.cfg.Tune.Mode == config.TuneAdopt {
			tn.apply(s, s.res, tn.now())
			tn.dirty[j.name] = true
		}
	}()
}

// lastReverted reads max by (policy, state, terms) (infscale_tuned_policy_info{target, installation})
// (installation: prometheus.series_labels, nil for none) over the revertLookBack before now at step, and returns the policy of
// the series with the latest sample when that series says reverted (a
// tie: any that does), with the start of its last run of samples and its
// terms ("" from a serve that did not export them); "" when none does.
// Only samples of value 1 count (serve's).
func lastReverted(ctx context.Context, api promql.API, target string, installation map[string]string, now time.Time, step time.Duration) (policy string, since time.Time, terms string, err error) {
	step = max(step, revertLookBack/(promql.MaxPointsPerSeries-1)+time.Second)
	m, _, err := api.Range(ctx, promql.OwnSeriesBy(Namespace+"_tuned_policy_info", target, installation, "policy", "state", "terms"), now.Add(-revertLookBack), now, step)
	if err != nil {
		return "", time.Time{}, "", err
	}
	// serve exports 1; any other value (NaN, 0: another writer's) is no
	// sample of the state.
	for _, ss := range m {
		ss.Values = slices.DeleteFunc(ss.Values, func(p model.SamplePair) bool { return p.Value != 1 })
	}
	var last model.Time
	for _, ss := range m {
		if n := len(ss.Values); n > 0 && ss.Values[n-1].Timestamp > last {
			last = ss.Values[n-1].Timestamp
		}
	}
	for _, ss := range m {
		n := len(ss.Values)
		if n == 0 || ss.Values[n-1].Timestamp != last || string(ss.Metric["state"]) != TuneStateReverted {
			continue
		}
		i := n - 1
		for i > 0 && ss.Values[i].Timestamp.Sub(ss.Values[i-1].Timestamp) <= step {
			i--
		}
		return string(ss.Metric["policy"]), ss.Values[i].Timestamp.Time(), string(ss.Metric["terms"]), nil
	}
	return "", time.Time{}, "", nil
}

// keptReverted reads max by (policy, terms) (infscale_tuned_policy_reverted{target, installation})
// over the revertLookBack before now at step and returns the policy and
// terms of the series with the latest sample of value 1 (serve's), the
// policy serve last kept reverted; "" when none.
func keptReverted(ctx context.Context, api promql.API, target string, installation map[string]string, now time.Time, step time.Duration) (policy, terms string, err error) {
	step = max(step, revertLookBack/(promql.MaxPointsPerSeries-1)+time.Second)
	m, _, err := api.Range(ctx, promql.OwnSeriesBy(Namespace+"_tuned_policy_reverted", target, installation, "policy", "terms"), now.Add(-revertLookBack), now, step)
	if err != nil {
		return "", "", err
	}
	var last model.Time
	for _, ss := range m {
		for _, p := range ss.Values {
			if p.Value == 1 && p.Timestamp > last {
				last, policy, terms = p.Timestamp, string(ss.Metric["policy"]), string(ss.Metric["terms"])
			}
		}
	}
	return policy, terms, nil
}

// result tunes cfg in process, or reads its file from tune.dir (nil: none
// there, or not newer than the last one).
func (tn *Tuning) result(ctx context.Context, cfg *config.Target, now time.Time) (*tune.TargetResult, error) {
	if dir := cfg.Tune.Dir; dir != "" {
		r, ok, err := tune.ReadResult(dir, cfg.Name)
		if err != nil || !ok {
			return nil, err
		}
		tn.mu.Lock()
		s := tn.targets[cfg.Name]
		stale := s != nil && s.res != nil && !r.At.After(s.res.At)
		period := tn.replayPeriod()
		tn.mu.Unlock()
		if stale {
			return nil, nil
		}
		// A file tuned for another max_miss, slo_ttft, interval, replica or scale to zero judged
		// "holds" on other terms: not shadowed, never adopted.
		if err := r.Matches(cfg, period); err != nil {
			return nil, fmt.Errorf("%s: %w; not used until infscale tune --shard writes a result for this configuration", tune.ResultPath(dir, cfg.Name), err)
		}
		// Only a newer result replaces the one taken: one stamped ahead of
		// serve's clock (a writer's clock running fast) would keep every
		// later one out until that time came.
		if r.At.After(now.Add(maxClockSkew)) {
			return nil, fmt.Errorf("%s: tuned on history up to %s, after serve's clock (%s): the clock of the machine that wrote it is ahead; not used", tune.ResultPath(dir, cfg.Name),
				r.At.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
		}
		// serve never deletes tune.dir files: one whose history and write
		// are both over staleResults every old is left from an earlier run
		// (a target of this name configured before, the CronJob stopped),
		// not taken by a target that has none (s.res nil) or an older one.
		if every := staleResults * time.Duration(cfg.Tune.Every); every > 0 && now.Sub(r.At) > every {
			if fi, err := os.Stat(tune.ResultPath(dir, cfg.Name)); err != nil || now.Sub(fi.ModTime()) > every {
				written := "(unknown)"
				if err == nil {
					written = fi.ModTime().UTC().Format(time.RFC3339)
				}
				return nil, fmt.Errorf("%s: tuned on history up to %s and written %s, over twice tune.every (%s) before serve's clock (%s): left from an earlier run (a target of this name configured before, or a CronJob that stopped); not used until infscale tune --shard writes it again (remove the file once its target is gone for good)",
					tune.ResultPath(dir, cfg.Name), r.At.UTC().Format(time.RFC3339), written, cfg.Tune.Every, now.UTC().Format(time.RFC3339))
			}
		}
		return &r, nil
	}
	if tn.API == nil {
		return nil, nil
	}
	o := tn.Options
	if o.Period <= 0 {
		tn.mu.Lock()
		o.Period = tn.replayPeriod()
		tn.mu.Unlock()
	}
	if o.Warn == nil {
		// The read's warnings and the replays' shed requests, as tune
		// --shard says them on stderr.
		o.Warn = func(msg string) { tn.logger().Warn("tuning warning", "target", cfg.Name, "warning", msg) }
	}
	if o.Size == nil && tn.Size != nil {
		o.Size = tn.sizer(cfg.Name)
	}
	start := time.Now()
	r, err := tune.TuneTarget(ctx, tn.API, cfg, now, o)
	if err != nil {
		return nil, err
	}
	// The history the data covered beside the span asked: less when
	// Prometheus keeps less than tune.history, or the target is newer.
	hist, _ := r.Covered(time.Duration(cfg.Tune.History))
	tn.logger().Info("target tuned", "target", cfg.Name, "policy", r.Policy, "holds", r.Holds, "history", hist, "history_asked", cfg.Tune.History.String(), "in_sample_miss_pct", r.InSample.MissPct,
		"out_of_sample_miss_pct", r.OutOfSample.MissPct, "replays", r.Replays, "took", time.Since(start).Round(time.Millisecond), "cpu_s", r.CPUSeconds)
	return &r, nil
}

// apply takes a new result for s (under mu): the candidate is shadowed,
// and in adopt mode adopted when it holds and the last switch is every
// old (or there was none).
func (tn *Tuning) apply(s *tuned, r *tune.TargetResult, now time.Time) {
	if s.res == nil || s.res.Policy != r.Policy {
		s.run = recommend.Decider{} // a new candidate starts its own memory
	}
	s.res = r
	tn.adapt(s)
	if s.cand == nil {
		tn.setInfo(s, r.Policy, TuneStateRejected)
		return
	}
	tu := s.cfg.Tune
	switch {
	case tu.Mode != config.TuneAdopt:
		tn.setInfo(s, r.Policy, TuneStateShadow)
	case !r.Holds:
		tn.setInfo(s, r.Policy, TuneStateRejected)
	case s.adoptedRes != nil && s.adoptedRes.Policy == r.Policy:
		s.adoptedRes = r // the same policy, newer figures
		tn.setInfo(s, r.Policy, TuneStateAdopted)
	case s.lookingBack:
		tn.setInfo(s, r.Policy, TuneStateShadow) // lookBack adopts it, or not, once read
	case r.Policy == s.reverted:
		// Its live misses were over the budget once: the replay that
		// chose it again does not see them, and adopting it would miss
		// again, one episode per every.
		tn.setInfo(s, r.Policy, TuneStateReverted)
	case !s.switched.IsZero() && now.Sub(s.switched) < time.Duration(tu.Every):
		tn.setInfo(s, r.Policy, TuneStateShadow) // at most one switch per every
	default:
		from := "configured"
		if s.adoptedRes != nil {
			from = s.adoptedRes.Policy
		}
		s.adopted, s.adoptedRes, s.adoptedAt, s.switched = s.cand, r, now, now
		tn.setInfo(s, r.Policy, TuneStateAdopted)
		tn.logger().Info("tuned policy adopted", "target", s.cfg.Name, "policy", r.Policy, "from", from)
		tn.event(s.cfg.Name, now, tuneEvent{Event: TuneStateAdopted, Policy: r.Policy, From: from, Holds: r.Holds, MaxMissPct: r.MaxMissPct,
			InSample: &r.InSample, OutOfSample: &r.OutOfSample, Stress: r.Stress, StressNames: r.StressNames, TunedAt: r.At})
	}
}

// check reads the adopted candidate's live TTFT misses since the switch
// (over tune.history at most: liveFrom) and reverts it when they exceed
// the budget.
func (tn *Tuning) check(ctx context.Context, name string, cfg *config.Target, now time.Time) {
	if tn.API == nil {
		return
	}
	tn.mu.Lock()
	s := tn.targets[name]
	if s == nil || s.adopted == nil {
		tn.mu.Unlock()
		return
	}
	since := s.adoptedAt
	tn.mu.Unlock()
	from := liveFrom(since, now, time.Duration(cfg.Tune.History))
	live, ok, err := tune.LiveMisses(ctx, tn.API, cfg, from, now, tn.Period)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		// Read again at the next look (a minute): the same failure is
		// said at debug until failRepeat has passed, as a run's is (a
		// Prometheus down for an hour said it 60 times per target).
		tn.mu.Lock()
		loud := s.checkFail.loud(err, now)
		tn.mu.Unlock()
		if loud {
			tn.logger().Warn("live misses not read; the adopted policy stays", "target", name, "err", err)
		} else {
			tn.logger().Debug("live misses not read as before; the adopted policy stays", "target", name, "err", err)
		}
		return
	}
	tn.mu.Lock()
	defer tn.mu.Unlock()
	s.checked = now
	s.checkFail.clear()
	if b := [2]float64{live.Lo, live.Hi}; ok && live.Hi != 0 && b != s.straddled {
		// config warns at load for vLLM's known buckets; these are the
		// server's as Prometheus holds them, any server's.
		s.straddled = b
		tn.logger().Warn("tune.slo_ttft is inside a bucket of the target's TTFT histogram: the live check that reverts an adopted policy counts only the requests above the bucket as late; give a bucket bound for an exact count (docs/tune.md)",
			"target", name, "slo_ttft", cfg.Tune.SLOTTFT.String(), "bucket", fmt.Sprintf("(%gs, %gs]", live.Lo, live.Hi))
	}
	if !ok || s.adopted == nil || !s.adoptedAt.Equal(since) || live.Late <= cfg.Tune.Budget() {
		return
	}
	policy := s.adoptedRes.Policy
	s.adopted, s.adoptedRes, s.switched = nil, nil, now
	tn.setReverted(s, policy)
	if s.res.Policy == policy {
		tn.setInfo(s, policy, TuneStateReverted)
	}
	// Else a later result of another policy is the target's last
	// candidate (its infscale_candidate_desired_replicas): its series and
	// state stay, and one waiting in shadow is adopted once every has
	// passed since this revert (stepFast).
	tn.dirty[name] = true
	tn.logger().Warn("tuned policy reverted: live SLO misses over budget", "target", name, "policy", policy, "miss_ratio", live.Late, "max_miss", cfg.Tune.Budget(), "requests", live.Requests)
	tn.event(name, now, tuneEvent{Event: TuneStateReverted, Policy: policy, From: policy, MaxMissPct: 100 * cfg.Tune.Budget(), LiveMissRatio: &live.Late, LiveRequests: live.Requests, Since: from})
}

// liveFrom is where the live misses of a candidate adopted at adopted are
// read from at now: the switch, or history (tune.history, the span its
// budget was judged on) before now when the switch is older. Counted from
// the switch alone, a candidate re-chosen by every later result (the same
// policy keeps its adoption time) was judged on ever more days: adopted 30
// days, a day at 2% misses read as 0.07%, under a 0.1% budget, and it was
// never reverted however it missed.
func liveFrom(adopted, now time.Time, history time.Duration) time.Time {
	if history > 0 && now.Sub(adopted) > history {
		return now.Add(-history)
	}
	return adopted
}

// setInfo sets the target's one infscale_tuned_policy_info series (under
// mu), with the terms it is in that state under (tune.Terms).
func (tn *Tuning) setInfo(s *tuned, policy, state string) {
	if s.infoPolicy != "" {
		tn.info.DeleteLabelValues(s.cfg.Name, s.infoPolicy, s.infoState, s.infoTerms)
	}
	s.infoPolicy, s.infoState, s.infoTerms, s.state = policy, state, tune.Terms(&s.cfg, tn.replayPeriod()), state
	tn.info.WithLabelValues(s.cfg.Name, policy, state, s.infoTerms).Set(1)
}

// setReverted sets s.reverted to policy (under mu) and exports it as the
// target's one infscale_tuned_policy_reverted series ("": none), read back
// after a restart (lookBack) whatever the candidate then is.
func (tn *Tuning) setReverted(s *tuned, policy string) {
	if s.reverted != "" {
		tn.revertedVec.DeleteLabelValues(s.cfg.Name, s.reverted, s.revertedTerms)
	}
	s.reverted, s.revertedTerms = policy, ""
	if policy != "" {
		s.revertedTerms = tune.Terms(&s.cfg, tn.replayPeriod())
		tn.revertedVec.WithLabelValues(s.cfg.Name, policy, s.revertedTerms).Set(1)
	}
}

// tuneEvent is an adopt or revert line of the audit log (under "tune").
type tuneEvent struct {
	Event         string         `json:"event"`
	Policy        string         `json:"policy"`
	From          string         `json:"from"`
	Holds         bool           `json:"holds,omitempty"`
	MaxMissPct    float64        `json:"max_miss_pct"`
	InSample      *tune.Figures  `json:"in_sample,omitempty"`
	OutOfSample   *tune.Figures  `json:"out_of_sample,omitempty"`
	Stress        []tune.Figures `json:"stress,omitempty"`
	StressNames   []string       `json:"stress_names,omitempty"`
	TunedAt       time.Time      `json:"tuned_at,omitzero"`
	LiveMissRatio *float64       `json:"live_miss_ratio,omitempty"`
	LiveRequests  float64        `json:"live_requests,omitempty"`
	Since         time.Time      `json:"since,omitzero"`
}

func (tn *Tuning) event(target string, at time.Time, e tuneEvent) {
	if tn.Audit != nil {
		tn.Audit(target, at, e)
	}
}

// auditEvent writes one tuning event to the audit log: a JSON line
// {"target", "at", "tune": event}, beside the decisions' lines.
func (l *Loop) auditEvent(target string, at time.Time, event any) {
	if l.audit == nil {
		return
	}
	b, err := json.Marshal(struct {
		Target string    `json:"target"`
		At     time.Time `json:"at"`
		Tune   any       `json:"tune"`
	}{target, at, event})
	if err == nil {
		l.auditMu.Lock()
		_, err = l.audit.Write(append(b, '\n'))
		l.auditMu.Unlock()
	}
	if err != nil {
		l.metrics.QueryError(target, "audit_write")
		l.limiter.logf(l.log, at, target, "audit_write", "audit log write failed", err)
	}
}

// SetTuning attaches tn to the loop: its targets follow SetConfig, its
// adopted policies decide, its candidates are decided every cycle, and its
// events go to the audit log.
func (l *Loop) SetTuning(tn *Tuning) {
	l.cycleMu.Lock()
	defer l.cycleMu.Unlock()
	l.tuning = tn
	tn.Audit = l.auditEvent
	l.mu.Lock()
	tn.setTargets(l.targets, l.period())
	l.mu.Unlock()
}

// sizer is Size as tune.TargetOptions.Size takes it for target's run:
// what Size says is logged as one warning naming the target.
func (tn *Tuning) sizer(target string) func(n, pools int, search bool, requests func() int64) replay.Sizing {
	return func(n, pools int, search bool, requests func() int64) replay.Sizing {
		var note strings.Builder
		s := tn.Size(&note, n, pools, search, requests)
		if msg := strings.TrimSpace(note.String()); msg != "" {
			tn.logger().Warn("tuning run sized to the memory limit", "target", target, "note", strings.TrimPrefix(msg, "note: "))
		}
		return s
	}
}

// newTuning is serve's Tuning: it reads the history from the Prometheus
// source's client (none in embedded mode: tune.dir results only) and
// replays at serve's interval.
func newTuning(reg prometheus.Registerer, src Source, cfg *config.File, o Options, log *slog.Logger) *Tuning {
	tn := NewTuning(reg)
	tn.Period, tn.Now, tn.Log, tn.StateDir, tn.Size, tn.SeriesLabels = cfg.IntervalDuration(), o.Now, log, o.StateDir, o.ReplaySize, cfg.Prometheus.SeriesLabels
	if ps, ok := prometheusOf(src); ok {
		tn.API = ps.Evaluator.API
		// A week's range queries get what tune --shard gets, not a
		// decision's prometheus.timeout and no retry: a hiccup would
		// cost the whole run, tried again only in tuneRetry.
		if c, ok := tn.API.(*promql.Client); ok {
			tn.API = c.ForHistory(max(promql.HistoryTimeout, time.Duration(cfg.Prometheus.Timeout)), promql.HistoryRetries)
		}
	}
	return tn
}

// CheckReplicated refuses, for serve run as several replicas
// (--leader-elect), a target that adopts candidates it tunes in process
// (tune.mode adopt without tune.dir): each replica would tune on its own
// history window at its own time, could adopt another candidate, and the
// consumer's max() over the replicas would decide on the larger. Results
// read from a tune.dir are the same file for every replica.
func CheckReplicated(cfg *config.File) error {
	for i, t := range cfg.Targets {
		if tu := t.Tune; tu != nil && tu.Mode == config.TuneAdopt && tu.Dir == "" {
			return fmt.Errorf("targets[%d].tune (target %q): mode: adopt tunes in process, and with several replicas (--leader-elect) each tunes on its own history at its own time, may adopt another candidate, and max() over the replicas decides on the larger: give the target tune.dir and run infscale tune --shard (the chart's CronJob), or use mode: shadow (docs/tune.md)", i, t.Name)
		}
	}
	return nil
}
