package kube

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/klog/v2"

	"github.com/infscale/infscale/internal/wallclock"
)

// Client-go's usual leader-election timings (kube-controller-manager's
// --leader-elect-lease-duration, --leader-elect-renew-deadline and
// --leader-elect-retry-period defaults).
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
	// DefaultLeaseName is the Lease serve elects its writer with.
	DefaultLeaseName = "infscale"
)

// LeaseConfig names the coordination.k8s.io/v1 Lease and the timings of
// the election (the same as client-go's LeaderElectionConfig).
type LeaseConfig struct {
	// Name and Namespace of the Lease (created if absent); serve's
	// namespace default is DefaultNamespace's, "" here is "default".
	Name, Namespace string
	// Identity is this instance's holderIdentity, unique among the
	// candidates (DefaultIdentity).
	Identity string
	// LeaseDuration is how long a candidate waits after the last observed
	// renewal before it takes the Lease; RenewDeadline is how long the
	// holder retries renewing before it gives up; RetryPeriod is the wait
	// between tries. Zero values take the defaults above. client-go requires
	// LeaseDuration > RenewDeadline > 1.2 × RetryPeriod; Check also requires
	// LeaseDuration > 1 s + 1.2 × RetryPeriod (renewals are seen per second).
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
}

// DefaultIdentity is the pod's name from the downward API ($POD_NAME),
// unique within a namespace; outside a pod, where two processes may share a
// host, the hostname with a random suffix.
func DefaultIdentity() string {
	if p := os.Getenv("POD_NAME"); p != "" {
		return p
	}
	h, err := os.Hostname()
	if err != nil || h == "" {
		h = "infscale"
	}
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return h + "_" + hex.EncodeToString(b)
}

// withDefaults fills zero fields.
func (c LeaseConfig) withDefaults() LeaseConfig {
	if c.Name == "" {
		c.Name = DefaultLeaseName
	}
	if c.Namespace == "" {
		c.Namespace = "default"
	}
	if c.Identity == "" {
		c.Identity = DefaultIdentity()
	}
	if c.LeaseDuration == 0 {
		c.LeaseDuration = DefaultLeaseDuration
	}
	if c.RenewDeadline == 0 {
		c.RenewDeadline = DefaultRenewDeadline
	}
	if c.RetryPeriod == 0 {
		c.RetryPeriod = DefaultRetryPeriod
	}
	return c
}

// Check reports timings client-go would refuse, in the flags' terms
// (--leader-elect-lease-duration, --leader-elect-renew-deadline,
// --leader-elect-retry-period), after defaults.
func (c LeaseConfig) Check() error {
	c = c.withDefaults()
	var errs []error
	// client-go's candidates compare the Lease as a record whose renewTime
	// has whole seconds: a renewal is seen only when the second changes,
	// so a lease of 1 s or less (plus a retry) expires while the holder
	// still renews, and two instances lead at once.
	if minLease := time.Second + time.Duration(leaderelection.JitterFactor*float64(c.RetryPeriod)); c.LeaseDuration <= minLease {
		errs = append(errs, fmt.Errorf("--leader-elect-lease-duration %s: must be more than 1s + %g × --leader-elect-retry-period (%s): other replicas see a renewal only when its whole second changes", c.LeaseDuration, leaderelection.JitterFactor, minLease))
	}
	if c.RetryPeriod <= 0 || c.RenewDeadline <= 0 {
		errs = append(errs, fmt.Errorf("--leader-elect-renew-deadline %s and --leader-elect-retry-period %s must be positive", c.RenewDeadline, c.RetryPeriod))
	}
	if c.LeaseDuration <= c.RenewDeadline {
		errs = append(errs, fmt.Errorf("--leader-elect-lease-duration %s must be greater than --leader-elect-renew-deadline %s", c.LeaseDuration, c.RenewDeadline))
	}
	if float64(c.RenewDeadline) <= leaderelection.JitterFactor*float64(c.RetryPeriod) {
		errs = append(errs, fmt.Errorf("--leader-elect-renew-deadline %s must be greater than %g × --leader-elect-retry-period %s", c.RenewDeadline, leaderelection.JitterFactor, c.RetryPeriod))
	}
	if c.Name != "" {
		if msgs := validation.IsDNS1123Subdomain(c.Name); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--leader-elect-resource-name %q: not a Lease name (lowercase letters, digits, '-' and '.', at most 253)", c.Name))
		}
	}
	if c.Namespace != "" {
		if msgs := validation.IsDNS1123Label(c.Namespace); len(msgs) > 0 {
			errs = append(errs, fmt.Errorf("--leader-elect-resource-namespace %q: not a namespace name (lowercase letters, digits and '-', at most 63)", c.Namespace))
		}
	}
	return errors.Join(errs...)
}

// Elector elects one writer among serve's replicas with a Lease (client-go
// tools/leaderelection, resourcelock.LeaseLock). Every replica keeps
// deciding; only the one for which IsLeader is true writes (spec.replicas,
// pod-deletion-cost) and exports infscale_desired_replicas (pkg/serve).
//
// IsLeader is true from the Lease's acquisition until the election stops,
// and only while the last successful write of the Lease (acquire or renew)
// is less than RenewDeadline old: a holder cut off from the API server
// stops writing within RenewDeadline of its last renewal, before
// LeaseDuration lets another candidate take over (clock-rate skew aside,
// as client-go's own guarantee).
type Elector struct {
	cfg    LeaseConfig
	client kubernetes.Interface
	log    *slog.Logger
	now    func() time.Time

	mu       sync.Mutex
	leading  bool
	renewed  time.Time // last successful Create or Update of the Lease
	onChange func(bool)
	// tried are the renewTimes (to the microsecond, as the Lease keeps
	// them) of this instance's last writes of the Lease naming itself;
	// twin is when a record naming this identity that it did not write
	// was last read, twinLogged when that was last logged.
	tried            [8]time.Time
	nTried           int
	twin, twinLogged time.Time
}

// NewElector returns an elector on client for cfg (zero fields take the
// defaults); log receives the election's own lines (leadership gained or
// lost, component=leader-election) and client-go's election messages
// through ClientLogHandler (component=client-go, at most WARN, each
// message at most once per ClientLogEvery): a Lease that cannot be read
// is otherwise an ERROR line every retry period (nil: discarded).
// The error is Check's.
func NewElector(client kubernetes.Interface, cfg LeaseConfig, log *slog.Logger) (*Elector, error) {
	if err := cfg.Check(); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Elector{cfg: cfg.withDefaults(), client: client, log: log, now: time.Now}, nil
}

// Config is the elector's configuration with defaults filled.
func (e *Elector) Config() LeaseConfig { return e.cfg }

// OnChange sets a function called with the new value whenever leadership
// is gained or lost (the infscale_leader gauge); call it before Run.
func (e *Elector) OnChange(f func(leader bool)) { e.onChange = f }

// IsLeader reports whether this instance may write now.
func (e *Elector) IsLeader() bool {
	return e.now().Before(e.LeaderUntil())
}

// LeaderUntil is the time up to which this instance may write: the start
// of its last successful write of the Lease plus RenewDeadline while it
// leads, the zero time when it does not. A write bounded by it
// (Applier.LeaderUntil) sends nothing after a renewal that failed for
// RenewDeadline, before LeaseDuration lets another replica take over.
//
// It is also the zero time once the wall clock has moved more than a
// second further than the monotonic one since that write, until the
// next: the machine was suspended (CLOCK_MONOTONIC, which the deadline
// counts, stops; the wall clock is set on resume), and the other
// replicas, whose clocks ran, may have taken the Lease meanwhile. A
// forward step of the clock looks alike and costs a retry period of
// writes; a step back changes nothing.
func (e *Elector) LeaderUntil() time.Time {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	if !e.leading || (!e.twin.IsZero() && now.Sub(e.twin) < e.cfg.LeaseDuration) {
		return time.Time{}
	}
	if wallclock.Jump(e.renewed, now) > time.Second {
		return time.Time{}
	}
	return e.renewed.Add(e.cfg.RenewDeadline)
}

// trying notes the renewTime of a write of the Lease naming this instance.
func (e *Elector) trying(r resourcelock.LeaderElectionRecord) {
	if r.HolderIdentity != e.cfg.Identity {
		return
	}
	e.mu.Lock()
	e.tried[e.nTried%len(e.tried)] = r.RenewTime.Truncate(time.Microsecond)
	e.nTried++
	e.mu.Unlock()
}

// read checks a record read from the Lease: one naming this identity with
// a renewTime it never wrote, once it has written one itself, was written
// by another replica given the same identity (--leader-elect-identity set
// alike in every pod). client-go lets both hold the Lease then, each
// taking the other's record for its own: two writers. Neither may write
// while such records keep coming (for LeaseDuration after the last), and
// it is logged at error level at most once a minute. A record of this
// identity from before its first write (a restarted pod of the same name)
// is its own.
//
// A record naming another holder, read while this instance leads, means
// the Lease was taken from it (an edit, another replica's acquisition
// after a renewal it never saw): it stops writing at once, not only after
// client-go's renewals have failed for RenewDeadline, and leads again only
// after its next successful acquisition.
func (e *Elector) read(r *resourcelock.LeaderElectionRecord) {
	if r != nil && r.HolderIdentity != "" && r.HolderIdentity != e.cfg.Identity {
		e.mu.Lock()
		lost := e.leading && !e.renewed.IsZero()
		e.renewed = time.Time{}
		e.mu.Unlock()
		if lost {
			e.log.Info("leader election: the Lease is held by another replica; this instance stops writing", "component", "leader-election",
				"lease", e.cfg.Namespace+"/"+e.cfg.Name, "identity", e.cfg.Identity, "holder", r.HolderIdentity)
		}
		return
	}
	if r == nil || r.HolderIdentity != e.cfg.Identity {
		return
	}
	t := r.RenewTime.Truncate(time.Microsecond)
	e.mu.Lock()
	if e.nTried == 0 || slices.ContainsFunc(e.tried[:], t.Equal) {
		e.mu.Unlock()
		return
	}
	now := e.now()
	e.twin = now
	log := e.twinLogged.IsZero() || now.Sub(e.twinLogged) >= ClientLogEvery
	if log {
		e.twinLogged = now
	}
	e.mu.Unlock()
	if log {
		e.log.Error("leader election: another replica holds the Lease under this identity; neither writes while both run (give each replica its own --leader-elect-identity, e.g. $POD_NAME from the downward API)",
			"component", "leader-election", "lease", e.cfg.Namespace+"/"+e.cfg.Name, "identity", e.cfg.Identity)
	}
}

// setLeading records leadership; a start whose election context has ended
// already (client-go calls OnStartedLeading in its own goroutine, which may
// run after OnStoppedLeading) is ignored.
func (e *Elector) setLeading(ctx context.Context, v bool) {
	e.mu.Lock()
	if v && ctx.Err() != nil {
		e.mu.Unlock()
		return
	}
	changed := e.leading != v
	e.leading = v
	f := e.onChange
	e.mu.Unlock()
	if changed {
		e.log.Info("leader election", "component", "leader-election", "lease", e.cfg.Namespace+"/"+e.cfg.Name, "identity", e.cfg.Identity, "leader", v)
		if f != nil {
			f(v)
		}
	}
}

// Run campaigns for the Lease until ctx is done: it acquires, renews, and
// after a lost Lease (renewals failing for RenewDeadline, API errors
// included) campaigns again. When ctx ends the Lease is released
// (ReleaseOnCancel) so that another replica takes over at its next retry
// instead of after LeaseDuration: cancel ctx only after this instance's
// writes have stopped. Run returns nil when ctx ends; an error only if the
// election cannot be set up.
func (e *Elector) Run(ctx context.Context) error {
	ctx = klog.NewContext(ctx, logr.FromSlogHandler(ClientLogHandler(e.log.Handler(), ClientLogEvery)))
	for ctx.Err() == nil {
		lock := &recordingLock{Interface: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Name: e.cfg.Name, Namespace: e.cfg.Namespace},
			Client:     e.client.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: e.cfg.Identity},
		}, e: e}
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock:            lock,
			LeaseDuration:   e.cfg.LeaseDuration,
			RenewDeadline:   e.cfg.RenewDeadline,
			RetryPeriod:     e.cfg.RetryPeriod,
			ReleaseOnCancel: true,
			Name:            e.cfg.Name,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(lctx context.Context) { e.setLeading(lctx, true) },
				OnStoppedLeading: func() { e.setLeading(ctx, false) },
			},
		})
		if err != nil {
			return fmt.Errorf("leader election: %w", err)
		}
		le.Run(ctx)
		select {
		case <-ctx.Done():
		case <-time.After(e.cfg.RetryPeriod):
		}
	}
	return nil
}

// recordingLock records the time of every successful write of the Lease,
// which IsLeader bounds by RenewDeadline.
type recordingLock struct {
	resourcelock.Interface
	e *Elector
}

// Get reads the Lease, checking for a twin of this identity (Elector.read).
func (l *recordingLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	r, raw, err := l.Interface.Get(ctx)
	if err == nil {
		l.e.read(r)
	}
	return r, raw, err
}

func (l *recordingLock) Create(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	l.e.trying(r)
	t := l.e.now()
	err := l.Interface.Create(ctx, r)
	l.wrote(t, r, err)
	return err
}

func (l *recordingLock) Update(ctx context.Context, r resourcelock.LeaderElectionRecord) error {
	l.e.trying(r)
	t := l.e.now()
	err := l.Interface.Update(ctx, r)
	l.wrote(t, r, err)
	return err
}

// wrote keeps the start time of a successful write that names this
// instance as the holder (the release, which names nobody, does not count).
func (l *recordingLock) wrote(t time.Time, r resourcelock.LeaderElectionRecord, err error) {
	if err != nil || r.HolderIdentity != l.e.cfg.Identity {
		return
	}
	l.e.mu.Lock()
	l.e.renewed = t
	l.e.mu.Unlock()
}
