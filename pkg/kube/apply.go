package kube

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Applier writes decided replicas to workloads: the one writer of
// spec.replicas for serve's apply: true targets and `infscale kube
// --apply`.
type Applier struct {
	// Cluster reads and writes the workloads.
	Cluster *Cluster
	// IsLeader reports whether this instance may write now (the Lease
	// holder when serve runs several replicas); nil: always (no election
	// configured). Called before every write.
	IsLeader func() bool
	// LeaderUntil, when set, replaces IsLeader: the time up to which this
	// instance may write (Elector.LeaderUntil; zero or past: it may not).
	// Every request of a write is bounded by it (WriteContext), so a
	// write whose reads, conflict retries or HPA check outlast the
	// leadership is not sent after it ended.
	LeaderUntil func() time.Time
}

// WriteContext is ctx bounded by this instance's leadership for a write:
// ErrNotLeader (and a nil context) when it may not write now; with
// LeaderUntil, ctx with that deadline (cancel releases it), whose end
// LeadershipEnded tells from the caller's own deadline. Each request of the
// write asks the leadership again right before it is sent (fence): a
// Lease taken by another holder ends it before that deadline.
func (a *Applier) WriteContext(ctx context.Context) (context.Context, context.CancelFunc, error) {
	switch {
	case a.LeaderUntil != nil:
		until := a.LeaderUntil()
		if !time.Now().Before(until) {
			return nil, nil, ErrNotLeader
		}
		wctx, cancel := context.WithDeadlineCause(ctx, until, errLeadershipEnded)
		return context.WithValue(wctx, fenceKey{}, func() bool { return time.Now().Before(a.LeaderUntil()) }), cancel, nil
	case a.IsLeader != nil:
		if !a.IsLeader() {
			return nil, nil, ErrNotLeader
		}
		wctx, cancel := context.WithCancel(ctx)
		return context.WithValue(wctx, fenceKey{}, a.IsLeader), cancel, nil
	}
	wctx, cancel := context.WithCancel(ctx)
	return wctx, cancel, nil
}

// fenceKey is the context key of a WriteContext's leadership check.
type fenceKey struct{}

// errLeaseLost is fence's answer when the leadership ended before its
// deadline: a renewal read the Lease naming another holder (or this
// identity's twin).
var errLeaseLost = fmt.Errorf("%w: the Lease was lost during the write", ErrNotLeader)

// fence is checked right before each request of a write: ctx's end, or,
// for a WriteContext, the leadership asked again, since a Lease taken by
// another holder ends it at once, before the deadline ctx carries. A
// request already sent may still land.
func fence(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if leads, ok := ctx.Value(fenceKey{}).(func() bool); ok && !leads() {
		return errLeaseLost
	}
	return nil
}

// errLeadershipEnded is the cause of a WriteContext that ended with the
// leadership.
var errLeadershipEnded = errors.New("the Lease's renew deadline passed during the write")

// LeadershipEnded returns err as an ErrNotLeader when wctx (from
// WriteContext) ended because the leadership did (the write's remaining
// requests were not sent), else err as it is.
func LeadershipEnded(wctx context.Context, err error) error {
	if err != nil && errors.Is(context.Cause(wctx), errLeadershipEnded) {
		return fmt.Errorf("%w: %w", ErrNotLeader, errLeadershipEnded)
	}
	return err
}

// Applied is what Apply did.
type Applied struct {
	// From is spec.replicas as read before the write.
	From int32
	// Wrote is true when spec.replicas was changed to the desired count.
	Wrote bool
}

// Apply sets ref's spec.replicas to desired (Cluster.SetReplicas:
// conflict-safe, nothing written when it already holds desired). It
// refuses with ErrNotLeader when IsLeader (LeaderUntil) says no, or when
// the leadership ends before its last request (none is sent after), and
// with a
// *ScaledError when an HPA (a KEDA ScaledObject's included) scales ref;
// the error of a failed read or write names the workload (Reason
// classifies it).
func (a *Applier) Apply(ctx context.Context, ref Ref, desired int32) (Applied, error) {
	if desired < 0 {
		return Applied{}, fmt.Errorf("%s: desired replicas %d < 0", ref, desired)
	}
	wctx, cancel, err := a.WriteContext(ctx)
	if err != nil {
		return Applied{}, err
	}
	defer cancel()
	ref = a.Cluster.resolve(ref)
	by, found, err := a.Cluster.ScaledBy(wctx, ref)
	if err != nil {
		return Applied{}, LeadershipEnded(wctx, fmt.Errorf("%s: checking for an HPA that scales it: %w", ref, err))
	}
	if found {
		return Applied{}, &ScaledError{Ref: ref, By: by}
	}
	from, wrote, err := a.Cluster.SetReplicas(wctx, ref, desired)
	return Applied{From: from, Wrote: wrote}, LeadershipEnded(wctx, err)
}
