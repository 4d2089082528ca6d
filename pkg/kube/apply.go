package kube

import (
	"context"
	"fmt"
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
// refuses with ErrNotLeader when IsLeader says no, and with a
// *ScaledError when an HPA (a KEDA ScaledObject's included) scales ref;
// the error of a failed read or write names the workload (Reason
// classifies it).
func (a *Applier) Apply(ctx context.Context, ref Ref, desired int32) (Applied, error) {
	if desired < 0 {
		return Applied{}, fmt.Errorf("%s: desired replicas %d < 0", ref, desired)
	}
	if a.IsLeader != nil && !a.IsLeader() {
		return Applied{}, ErrNotLeader
	}
	ref = a.Cluster.resolve(ref)
	by, found, err := a.Cluster.ScaledBy(ctx, ref)
	if err != nil {
		return Applied{}, fmt.Errorf("%s: checking for an HPA that scales it: %w", ref, err)
	}
	if found {
		return Applied{}, &ScaledError{Ref: ref, By: by}
	}
	from, wrote, err := a.Cluster.SetReplicas(ctx, ref, desired)
	return Applied{From: from, Wrote: wrote}, err
}
