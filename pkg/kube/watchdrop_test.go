package kube_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"

	"github.com/infscale/infscale/pkg/kube/kubefake"
)

// TestPodsAfterWatchDrops: the pod informer's watch ends (an API server
// restart, a load balancer's idle timeout) after it listed chat-a; it
// watches again on its own, and a pod created after that is listed by
// Pods, with no error and no restart of the informer.
func TestPodsAfterWatchDrops(t *testing.T) {
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "llm", Name: name, Labels: map[string]string{"app": "chat"}}}
	}
	c, client, _ := kubefake.New("llm", pod("chat-a"))
	t.Cleanup(c.Close)
	first := watch.NewFake()
	var watches atomic.Int32
	client.PrependWatchReactor("pods", func(k8stesting.Action) (bool, watch.Interface, error) {
		if watches.Add(1) == 1 {
			return true, first, nil // the watch the test drops
		}
		return false, nil, nil // the fake's own watch
	})
	sel := labels.SelectorFromSet(labels.Set{"app": "chat"})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	names := func() []string {
		pods, err := c.Pods(ctx, "llm", sel)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, p := range pods {
			out = append(out, p.Name)
		}
		return out
	}
	if got := names(); len(got) != 1 || got[0] != "chat-a" {
		t.Fatalf("pods %v, want [chat-a]", got)
	}
	first.Stop() // the watch drops
	for watches.Load() < 2 {
		if ctx.Err() != nil {
			t.Fatal("the informer did not watch again after its watch dropped")
		}
		time.Sleep(10 * time.Millisecond)
	}
	// The fake's tracker sends a watcher only what happens after it
	// registered (an API server replays from the resourceVersion): let it.
	time.Sleep(100 * time.Millisecond)
	if _, err := client.CoreV1().Pods("llm").Create(ctx, pod("chat-b"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		if got := names(); len(got) == 2 && got[1] == "chat-b" {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("pods %v after the watch dropped and chat-b was created, want [chat-a chat-b]", names())
		}
		time.Sleep(10 * time.Millisecond)
	}
}
