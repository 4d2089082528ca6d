package kube

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestElectorClockSkew: the Lease was last renewed by "b", whose clock
// runs an hour ahead (renewTime an hour in a's future), and b has stopped.
// a does not wait for b's renewTime: it takes the Lease once it has seen
// no change for the lease duration (2 s) on its own clock, not before
// (the renewTime is not trusted either way), and not an hour later. Its
// LeaderUntil is then at most RenewDeadline (600 ms) ahead of its own now.
func TestElectorClockSkew(t *testing.T) {
	client := leaseAPI()
	ahead := metav1.NewMicroTime(time.Now().Add(time.Hour))
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "infscale", Namespace: "llm"},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("b"), LeaseDurationSeconds: ptr.To[int32](2), AcquireTime: &ahead, RenewTime: &ahead}}
	if _, err := client.CoordinationV1().Leases("llm").Create(context.Background(), lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	a, err := NewElector(client, fastLease("a"), nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	startElector(t, a)
	took := waitFor(t, "a takes the stale Lease", 5*time.Second, a.IsLeader)
	// a observes the record at its first try (at once), then needs 2 s
	// without a change; its retries come every 100 to 220 ms.
	if took < 2*time.Second {
		t.Errorf("a led %s after start, before the lease duration 2s without a renewal", took)
	}
	if u := a.LeaderUntil(); u.Sub(time.Now()) > 600*time.Millisecond || u.Before(start) {
		t.Errorf("LeaderUntil %s after now, want within the renew deadline 600ms", u.Sub(time.Now()))
	}
}
