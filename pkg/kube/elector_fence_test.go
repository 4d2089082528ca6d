package kube

import (
	"context"
	"errors"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestElectorFencesWriteInProgress: the real Elector's LeaderUntil given
// to an Applier. The Lease is taken (an operator's edit) during the first
// of four pod-deletion-cost patches; once a renewal has read it, the
// other three are not sent, though the renew deadline the write started
// with (10 s) is far ahead.
func TestElectorFencesWriteInProgress(t *testing.T) {
	client := leaseAPI()
	cfg := fastLease("a")
	cfg.LeaseDuration, cfg.RenewDeadline = 20*time.Second, 10*time.Second
	a := leading(t, client, cfg)
	leases := client.CoordinationV1().Leases("llm")
	// The pods' API is another fake: the leases' holds its lock while a
	// reactor runs, and the first patch takes the Lease through it.
	pods := fake.NewClientset()
	patches := 0
	pods.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		patches++
		if patches == 1 {
			for {
				l, err := leases.Get(context.Background(), "infscale", metav1.GetOptions{})
				if err != nil {
					t.Error(err)
					break
				}
				thief, now := "thief", metav1.NewMicroTime(time.Now())
				l.Spec.HolderIdentity, l.Spec.RenewTime = &thief, &now
				if _, err = leases.Update(context.Background(), l, metav1.UpdateOptions{}); err == nil || !apierrors.IsConflict(err) {
					break
				}
			}
			waitFor(t, "a stops leading", 5*time.Second, func() bool { return !a.IsLeader() })
		}
		return true, nil, nil
	})
	ap := &Applier{LeaderUntil: a.LeaderUntil}
	wctx, cancel, err := ap.WriteContext(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	plan := []CostPatch{{Pod: "p0", To: 4}, {Pod: "p1", To: 3}, {Pod: "p2", To: 2}, {Pod: "p3", To: 1}}
	n, err := SetDeletionCosts(wctx, pods, "llm", plan)
	if n != 1 || patches != 1 || !errors.Is(LeadershipEnded(wctx, err), ErrNotLeader) {
		t.Errorf("patched %d, %d sent, err %v; want 1, 1, ErrNotLeader", n, patches, err)
	}
}
