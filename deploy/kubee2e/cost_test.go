package kubee2e

import (
	"context"
	"sort"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/kubernetes/pkg/controller"
)

// TestServeDeletionCost: before a scale-down decision serve sets
// controller.kubernetes.io/pod-deletion-cost on the Ready pods to each
// pod's running + waiting; the ReplicaSet controller's own deletion order
// (pkg/controller's ActivePodsWithRanks, the sort its scale-down uses) then
// removes the idlest first. Pages: chat-a 4 + 1 = 5, chat-b 1 + 0 = 1,
// chat-c 2 + 1 = 3; sum 9 on spec 3, target 10: desired ceil(9/10) = 1,
// below 3. Costs a=5, b=1, c=3; deletion order b, c, a.
func TestServeDeletionCost(t *testing.T) {
	c := startCluster(t)
	f := c.idleTrio(t)
	s := c.startServe(t, chatConfig(f.Port, "  apply: true\n  pod_deletion_cost: true\n"))
	c.waitReplicas(t, s, 1)

	// The costs are written before spec.replicas in the same cycle.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := c.client.CoreV1().Pods(metav1.NamespaceDefault).List(ctx, metav1.ListOptions{LabelSelector: "app=chat"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"chat-a": "5", "chat-b": "1", "chat-c": "3"}
	var pods []*corev1.Pod
	for i := range list.Items {
		p := &list.Items[i]
		if got := p.Annotations[corev1.PodDeletionCost]; got != want[p.Name] {
			t.Errorf("pod %s: %s = %q, want %q", p.Name, corev1.PodDeletionCost, got, want[p.Name])
		}
		pods = append(pods, p)
	}
	sort.Sort(controller.ActivePodsWithRanks{Pods: pods, Rank: make([]int, len(pods))})
	var order []string
	for _, p := range pods {
		order = append(order, p.Name)
	}
	if got := strings.Join(order, " "); got != "chat-b chat-c chat-a" {
		t.Fatalf("ReplicaSet deletion order %q, want chat-b chat-c chat-a (idlest first)", got)
	}
}
