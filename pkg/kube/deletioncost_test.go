package kube

import (
	"context"
	"math"
	"reflect"
	"slices"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func pod(name string, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "llm", Annotations: annotations,
		Labels: map[string]string{"app": "chat"}}}
}

func TestDeletionCost(t *testing.T) {
	for _, tc := range []struct {
		in   float64
		want int32
	}{
		{0, 0}, {12, 12}, {3.6, 4}, {2.5, 3}, {2.4, 2}, {-1, 0}, {math.NaN(), 0},
		{3e9, math.MaxInt32}, // the annotation is an int32: 2147483647 at most
	} {
		if got := DeletionCost(tc.in); got != tc.want {
			t.Errorf("DeletionCost(%v) = %d, want %d", tc.in, got, tc.want)
		}
	}
}

// chatPods: five pods of one ReplicaSet and what a scrape saw of each.
//
//	pod     running+waiting  annotation now  cost    change
//	chat-a  8+4 = 12         absent (0)      12      +12
//	chat-b  0                "5" (stale)     0       -5
//	chat-c  3.6 (an average) "4"             4       none: not patched
//	chat-d  25+5 = 30        absent (0)      30      +30
//	chat-e  not read         "7"             -       left as it is
//
// Largest correction first: chat-d (30), chat-a (12), chat-b (5).
func chatPods() ([]*corev1.Pod, map[string]float64) {
	pods := []*corev1.Pod{
		pod("chat-a", nil),
		pod("chat-b", map[string]string{corev1.PodDeletionCost: "5"}),
		pod("chat-c", map[string]string{corev1.PodDeletionCost: "4", "other": "kept"}),
		pod("chat-d", nil),
		pod("chat-e", map[string]string{corev1.PodDeletionCost: "7"}),
	}
	return pods, map[string]float64{"chat-a": 12, "chat-b": 0, "chat-c": 3.6, "chat-d": 30}
}

func TestPlanDeletionCosts(t *testing.T) {
	pods, out := chatPods()
	got, deferred := PlanDeletionCosts(pods, out, 0)
	want := []CostPatch{{"chat-d", "", 30}, {"chat-a", "", 12}, {"chat-b", "5", 0}}
	if !reflect.DeepEqual(got, want) || deferred != 0 {
		t.Errorf("plan %+v (deferred %d), want %+v", got, deferred, want)
	}
	got, deferred = PlanDeletionCosts(pods, out, 2)
	if !reflect.DeepEqual(got, want[:2]) || deferred != 1 {
		t.Errorf("bounded to 2: %+v (deferred %d), want %+v and 1 deferred", got, deferred, want[:2])
	}
	// Equal corrections go by name; a pod being deleted is left alone;
	// an unparsable value counts as 0 (as the ReplicaSet controller reads
	// it) and is rewritten.
	now := metav1.Now()
	gone := pod("chat-f", nil)
	gone.DeletionTimestamp = &now
	// An idle pod without the annotation is at 0 already: not patched.
	got, _ = PlanDeletionCosts([]*corev1.Pod{pod("z", nil), pod("y", map[string]string{corev1.PodDeletionCost: "008"}), gone, pod("idle", nil)},
		map[string]float64{"z": 3, "y": 3, "chat-f": 9, "idle": 0}, 0)
	want = []CostPatch{{"y", "008", 3}, {"z", "", 3}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ties: %+v, want %+v", got, want)
	}
}

// TestSetDeletionCosts: after the patches the annotations rank the pods
// by outstanding requests, chat-b (0) < chat-c (4) < chat-e (7, not read:
// kept) < chat-a (12) < chat-d (30), so a ReplicaSet of these five ready
// pods scaling to 3 removes chat-b and chat-c, the idlest; other
// annotations stay; a pod deleted between the list and the patch is
// skipped without an error.
func TestSetDeletionCosts(t *testing.T) {
	pods, out := chatPods()
	var objs []runtime.Object
	for _, p := range pods {
		objs = append(objs, p)
	}
	client := fake.NewClientset(objs...)
	patches, _ := PlanDeletionCosts(pods, out, 0)
	patches = append(patches, CostPatch{Pod: "chat-gone", To: 1})
	n, err := SetDeletionCosts(context.Background(), client, "llm", patches)
	if err != nil || n != 3 {
		t.Fatalf("SetDeletionCosts: %d patched, %v; want 3, nil", n, err)
	}
	want := map[string]map[string]string{
		"chat-a": {corev1.PodDeletionCost: "12"},
		"chat-b": {corev1.PodDeletionCost: "0"},
		"chat-c": {corev1.PodDeletionCost: "4", "other": "kept"},
		"chat-d": {corev1.PodDeletionCost: "30"},
		"chat-e": {corev1.PodDeletionCost: "7"},
	}
	for name, w := range want {
		p, err := client.CoreV1().Pods("llm").Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(p.Annotations, w) {
			t.Errorf("%s annotations %v, want %v", name, p.Annotations, w)
		}
		if p.Labels["app"] != "chat" {
			t.Errorf("%s lost its labels: %v", name, p.Labels)
		}
	}
	var ranked []*corev1.Pod
	for _, p := range pods {
		q, _ := client.CoreV1().Pods("llm").Get(context.Background(), p.Name, metav1.GetOptions{})
		ranked = append(ranked, q)
	}
	slices.SortStableFunc(ranked, func(a, b *corev1.Pod) int {
		x, _ := strconv.Atoi(a.Annotations[corev1.PodDeletionCost])
		y, _ := strconv.Atoi(b.Annotations[corev1.PodDeletionCost])
		return x - y
	})
	var order []string
	for _, p := range ranked {
		order = append(order, p.Name)
	}
	if want := []string{"chat-b", "chat-c", "chat-e", "chat-a", "chat-d"}; !reflect.DeepEqual(order, want) {
		t.Errorf("pods by cost %v, want %v", order, want)
	}
	var verbs []string
	for _, a := range client.Actions() {
		if pa, ok := a.(k8stesting.PatchAction); ok {
			verbs = append(verbs, pa.GetName()+":"+string(pa.GetPatchType()))
		}
	}
	wantVerbs := []string{"chat-d:application/merge-patch+json", "chat-a:application/merge-patch+json",
		"chat-b:application/merge-patch+json", "chat-gone:application/merge-patch+json"}
	if !reflect.DeepEqual(verbs, wantVerbs) {
		t.Errorf("patches sent %v, want %v", verbs, wantVerbs)
	}
	// A second plan on the patched pods has nothing to do.
	if again, _ := PlanDeletionCosts(ranked, out, 0); len(again) != 0 {
		t.Errorf("second plan %+v, want none", again)
	}
}
