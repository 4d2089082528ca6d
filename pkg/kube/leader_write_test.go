package kube_test

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/infscale/infscale/pkg/kube"
	"github.com/infscale/infscale/pkg/kube/kubefake"
)

// TestApplyStopsWhenLeadershipEnds: the leadership ends (its renew
// deadline passes: the Lease could not be renewed) while Apply is between
// its first update, which conflicts (another writer set 5), and the
// retry. The retry is not sent: Apply answers ErrNotLeader, one update
// reached the API (the conflicting one), nothing was written and
// spec.replicas keeps the other writer's 5. Before, the leadership was
// checked once at Apply's start and the retry wrote 4 after it ended,
// beside the new holder's writes.
func TestApplyStopsWhenLeadershipEnds(t *testing.T) {
	c, _, sc := kubefake.New("llm")
	sc.Set("llm", kubefake.Deployments, "chat", 2, "app=chat")
	until := time.Now().Add(2 * time.Second)
	sc.BeforeUpdate = func(s *kubefake.Scales, n int) {
		if n == 1 {
			time.Sleep(time.Until(until) + 10*time.Millisecond) // a slow API server: the renewals fail meanwhile
			s.SetLocked("llm", kubefake.Deployments, "chat", 5)
		}
	}
	a := &kube.Applier{Cluster: c, LeaderUntil: func() time.Time { return until }}
	_, err := a.Apply(context.Background(), chatRef(), 4)
	if !errors.Is(err, kube.ErrNotLeader) || kube.Reason(err) != "not_leader" {
		t.Errorf("Apply = %v (reason %s), want ErrNotLeader", err, kube.Reason(err))
	}
	if sc.Updates != 1 || len(sc.Written) != 0 || sc.Replicas("llm", kubefake.Deployments, "chat") != 5 {
		t.Errorf("%d updates, written %v, spec.replicas %d; want 1 update (the conflict), nothing written, 5", sc.Updates, sc.Written, sc.Replicas("llm", kubefake.Deployments, "chat"))
	}
	// Past the leadership: refused before any request.
	gets := sc.Gets
	if _, err := a.Apply(context.Background(), chatRef(), 4); !errors.Is(err, kube.ErrNotLeader) || sc.Gets != gets {
		t.Errorf("after the leadership: %v, %d gets (want %d)", err, sc.Gets, gets)
	}
}

// TestDeletionCostsStopWhenLeadershipEnds: three pods due a cost, the
// first patch outlasting the leadership: the other two are not sent, and
// the answer is ErrNotLeader with 1 patched.
func TestDeletionCostsStopWhenLeadershipEnds(t *testing.T) {
	var pods []runtime.Object
	for _, n := range []string{"chat-a", "chat-b", "chat-c"} {
		pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "llm", Name: n}})
	}
	c, client, _ := kubefake.New("llm", pods...)
	until := time.Now().Add(2 * time.Second)
	patches := 0
	client.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		patches++
		if patches == 1 {
			time.Sleep(time.Until(until) + 10*time.Millisecond)
		}
		return false, nil, nil
	})
	a := &kube.Applier{Cluster: c, LeaderUntil: func() time.Time { return until }}
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
