package kube_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/infscale/infscale/pkg/kube"
	"github.com/infscale/infscale/pkg/kube/kubefake"
)

// lease is a LeaderUntil that leads for a minute until lost is set (what
// Elector.LeaderUntil answers once a renewal reads the Lease naming
// another holder: zero, long before the renew deadline).
type lease struct {
	until time.Time
	lost  atomic.Bool
}

func (l *lease) LeaderUntil() time.Time {
	if l.lost.Load() {
		return time.Time{}
	}
	return l.until
}

// TestApplyFencedWhenLeaseTaken: the Lease is taken (an operator's edit,
// another replica) while Apply is between its first update, which
// conflicts, and the retry: the retry is not sent, though the renew
// deadline the write started with is still ahead. Before, only that
// deadline bounded the write and the retry wrote 4 beside the new holder.
func TestApplyFencedWhenLeaseTaken(t *testing.T) {
	c, _, sc := kubefake.New("llm")
	sc.Set("llm", kubefake.Deployments, "chat", 2, "app=chat")
	l := &lease{until: time.Now().Add(time.Minute)}
	sc.BeforeUpdate = func(s *kubefake.Scales, n int) {
		if n == 1 {
			l.lost.Store(true)
			s.SetLocked("llm", kubefake.Deployments, "chat", 5)
		}
	}
	a := &kube.Applier{Cluster: c, LeaderUntil: l.LeaderUntil}
	_, err := a.Apply(context.Background(), chatRef(), 4)
	if !errors.Is(err, kube.ErrNotLeader) || kube.Reason(err) != "not_leader" {
		t.Errorf("Apply = %v (reason %s), want ErrNotLeader", err, kube.Reason(err))
	}
	if sc.Updates != 1 || sc.Gets != 1 || len(sc.Written) != 0 || sc.Replicas("llm", kubefake.Deployments, "chat") != 5 {
		t.Errorf("%d gets, %d updates, written %v, spec.replicas %d; want 1 get, 1 update (the conflict), nothing written, 5", sc.Gets, sc.Updates, sc.Written, sc.Replicas("llm", kubefake.Deployments, "chat"))
	}
}

// TestDeletionCostsFencedWhenLeaseTaken: the Lease is taken during the
// first of three patches: the other two are not sent.
func TestDeletionCostsFencedWhenLeaseTaken(t *testing.T) {
	var pods []runtime.Object
	for _, n := range []string{"chat-a", "chat-b", "chat-c"} {
		pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "llm", Name: n}})
	}
	c, client, _ := kubefake.New("llm", pods...)
	l := &lease{until: time.Now().Add(time.Minute)}
	patches := 0
	client.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		patches++
		l.lost.Store(true)
		return false, nil, nil
	})
	a := &kube.Applier{Cluster: c, LeaderUntil: l.LeaderUntil}
	wctx, cancel, err := a.WriteContext(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	plan := []kube.CostPatch{{Pod: "chat-a", To: 7}, {Pod: "chat-b", To: 3}, {Pod: "chat-c", To: 1}}
	n, err := kube.SetDeletionCosts(wctx, c.Client, "llm", plan)
	err = kube.LeadershipEnded(wctx, err)
	if n != 1 || patches != 1 || !errors.Is(err, kube.ErrNotLeader) {
		t.Errorf("patched %d, %d patches sent, err %v; want 1, 1, ErrNotLeader", n, patches, err)
	}
}
