package kube_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8stesting "k8s.io/client-go/testing"

	"github.com/infscale/infscale/pkg/kube"
	"github.com/infscale/infscale/pkg/kube/kubefake"
)

func chatRef() kube.Ref {
	return kube.Ref{Namespace: "llm", CrossVersionObjectReference: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "chat"}}
}

// pod is a pod of the chat Deployment (labels app=chat), Ready or not.
func pod(name, ip string, ready bool) *corev1.Pod {
	st := corev1.ConditionFalse
	if ready {
		st = corev1.ConditionTrue
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "llm", Name: name, Labels: map[string]string{"app": "chat"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "vllm", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8000}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: st}}},
	}
}

func TestScaleReadsSpecReplicasAndSelector(t *testing.T) {
	c, _, sc := kubefake.New("llm")
	sc.Set("llm", kubefake.Deployments, "chat", 3, "app=chat,tier=gpu")
	w, err := c.Scale(context.Background(), chatRef())
	if err != nil {
		t.Fatal(err)
	}
	if w.Replicas != 3 || w.Resource != kubefake.Deployments {
		t.Errorf("replicas %d resource %v, want 3 deployments.apps", w.Replicas, w.Resource)
	}
	if !w.Selector.Matches(labels.Set{"app": "chat", "tier": "gpu"}) || w.Selector.Matches(labels.Set{"app": "chat"}) {
		t.Errorf("selector %v, want app=chat,tier=gpu", w.Selector)
	}
	// The default namespace fills a reference without one.
	ref := chatRef()
	ref.Namespace = ""
	if w, err := c.Scale(context.Background(), ref); err != nil || w.Ref.Namespace != "llm" {
		t.Errorf("default namespace: %+v %v", w.Ref, err)
	}
	// A workload that does not exist, and a kind the API does not serve.
	ref = chatRef()
	ref.Name = "gone"
	if _, err := c.Scale(context.Background(), ref); kube.Reason(err) != "not_found" || !strings.Contains(err.Error(), "Deployment llm/gone") {
		t.Errorf("missing workload: %v (reason %s)", err, kube.Reason(err))
	}
	ref = chatRef()
	ref.APIVersion, ref.Kind = "leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"
	if _, err := c.Scale(context.Background(), ref); kube.Reason(err) != "not_found" || !strings.Contains(err.Error(), "CRD") {
		t.Errorf("unknown kind: %v (reason %s)", err, kube.Reason(err))
	}
}

// TestScaleRefusesNegativeReplicas: a scale subresource saying spec.replicas
// -3 is garbage (the API server's validation forbids it): Scale returns an
// error naming the workload and the count, and no Workload to decide from.
func TestScaleRefusesNegativeReplicas(t *testing.T) {
	c, _, sc := kubefake.New("llm")
	sc.Set("llm", kubefake.Deployments, "chat", -3, "app=chat")
	w, err := c.Scale(context.Background(), chatRef())
	if err == nil || !strings.Contains(err.Error(), "Deployment llm/chat: scale spec.replicas -3, status.replicas -3: a replica count cannot be negative") || w.Replicas != 0 {
		t.Errorf("Scale = %+v, %v; want the negative count refused", w, err)
	}
}

// readyNames polls the informer's view until it equals want (the fake's
// watch delivers asynchronously).
func readyNames(t *testing.T, c *kube.Cluster, want []string) {
	t.Helper()
	sel := labels.SelectorFromSet(labels.Set{"app": "chat"})
	var got []string
	for range 200 {
		pods, err := c.Pods(context.Background(), "llm", sel)
		if err != nil {
			t.Fatal(err)
		}
		got = got[:0]
		for _, p := range pods {
			if kube.Ready(p) {
				got = append(got, p.Name)
			}
		}
		if reflect.DeepEqual(got, want) || (len(got) == 0 && len(want) == 0) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("ready pods %v, want %v", got, want)
}

func TestPodsFollowReadiness(t *testing.T) {
	other := pod("web-0", "10.0.0.9", true)
	other.Labels = map[string]string{"app": "web"}
	c, client, _ := kubefake.New("llm", pod("chat-a", "10.0.0.1", true), pod("chat-b", "10.0.0.2", false), other)
	defer c.Close()
	ctx := context.Background()
	readyNames(t, c, []string{"chat-a"})
	// chat-b becomes Ready, a third pod starts.
	b := pod("chat-b", "10.0.0.2", true)
	if _, err := client.CoreV1().Pods("llm").Update(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Pods("llm").Create(ctx, pod("chat-c", "", false), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	readyNames(t, c, []string{"chat-a", "chat-b"})
	// chat-a goes unready, chat-b is being deleted (scaled away), then gone.
	if _, err := client.CoreV1().Pods("llm").Update(ctx, pod("chat-a", "10.0.0.1", false), metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	b.DeletionTimestamp = &now
	if _, err := client.CoreV1().Pods("llm").Update(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	readyNames(t, c, nil)
	if err := client.CoreV1().Pods("llm").Delete(ctx, "chat-b", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	sel := labels.SelectorFromSet(labels.Set{"app": "chat"})
	for range 200 {
		pods, _ := c.Pods(ctx, "llm", sel)
		if len(pods) == 2 {
			pending := 0
			for _, p := range pods {
				if kube.Pending(p) {
					pending++
				}
			}
			if pending != 2 {
				t.Errorf("%d pending pods (chat-a unready, chat-c starting), want 2", pending)
			}
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("chat-b still listed after its deletion")
}

func TestPodURL(t *testing.T) {
	p := pod("chat-a", "10.0.0.1", true)
	p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: "proxy", Ports: []corev1.ContainerPort{{Name: "metrics", ContainerPort: 9090}}})
	for _, c := range []struct {
		port intstr.IntOrString
		want string
	}{
		{intstr.FromInt32(8000), "http://10.0.0.1:8000/metrics"},
		{intstr.FromString("metrics"), "http://10.0.0.1:9090/metrics"},
	} {
		if got, err := kube.PodURL(p, c.port, "/metrics"); got != c.want || err != nil {
			t.Errorf("port %v: %q %v, want %q", c.port, got, err, c.want)
		}
	}
	if _, err := kube.PodURL(p, intstr.IntOrString{}, "/metrics"); err == nil || !strings.Contains(err.Error(), "2 container ports") {
		t.Errorf("no port, two declared: %v", err)
	}
	if _, err := kube.PodURL(p, intstr.FromString("grpc"), "/metrics"); err == nil || !strings.Contains(err.Error(), `no container port named "grpc"`) {
		t.Errorf("unknown name: %v", err)
	}
	one := pod("chat-b", "fd00::2", true)
	if got, _ := kube.PodURL(one, intstr.IntOrString{}, "/m"); got != "http://[fd00::2]:8000/m" {
		t.Errorf("one declared port, IPv6: %q", got)
	}
}

// TestApplyConflict: another writer changes the scale between Apply's read
// and its write; the update conflicts, is retried on a fresh read, and
// writes the decided number (not re-decided from the other writer's 5).
func TestApplyConflict(t *testing.T) {
	c, _, sc := kubefake.New("llm")
	sc.Set("llm", kubefake.Deployments, "chat", 2, "app=chat")
	sc.BeforeUpdate = func(s *kubefake.Scales, n int) {
		if n == 1 {
			s.SetLocked("llm", kubefake.Deployments, "chat", 5)
		}
	}
	a := &kube.Applier{Cluster: c}
	got, err := a.Apply(context.Background(), chatRef(), 4)
	if err != nil {
		t.Fatal(err)
	}
	if !got.Wrote || got.From != 5 || sc.Updates != 2 || sc.Gets != 2 || !reflect.DeepEqual(sc.Written, []int32{4}) {
		t.Errorf("applied %+v, %d gets, %d updates, written %v; want from 5 (the re-read), 2 gets, 2 updates, written [4]", got, sc.Gets, sc.Updates, sc.Written)
	}
	if r := sc.Replicas("llm", kubefake.Deployments, "chat"); r != 4 {
		t.Errorf("spec.replicas %d, want 4", r)
	}
	// Already 4: read, nothing written.
	sc.BeforeUpdate = nil
	if got, err := a.Apply(context.Background(), chatRef(), 4); err != nil || got.Wrote || sc.Updates != 2 {
		t.Errorf("no change: %+v %v, %d updates (want still 2)", got, err, sc.Updates)
	}
	// Not the leader: nothing read or written.
	a.IsLeader = func() bool { return false }
	gets := sc.Gets
	if _, err := a.Apply(context.Background(), chatRef(), 1); !errors.Is(err, kube.ErrNotLeader) || sc.Gets != gets || kube.Reason(err) != "not_leader" {
		t.Errorf("not leader: %v, %d gets (want %d)", err, sc.Gets, gets)
	}
}

func hpa(name string, target string, mod func(*autoscalingv2.HorizontalPodAutoscaler)) *autoscalingv2.HorizontalPodAutoscaler {
	h := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: "llm", Name: name},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: target},
			MaxReplicas:    8,
		},
	}
	if mod != nil {
		mod(h)
	}
	return h
}

func TestApplyRefusedUnderAnHPA(t *testing.T) {
	for _, c := range []struct {
		name   string
		hpas   []*autoscalingv2.HorizontalPodAutoscaler
		reason string
		says   string
	}{
		{"plain HPA", []*autoscalingv2.HorizontalPodAutoscaler{hpa("web", "web", nil), hpa("chat-hpa", "chat", nil)},
			"scaled_by_hpa", "Deployment llm/chat is scaled by HorizontalPodAutoscaler chat-hpa"},
		{"KEDA owner", []*autoscalingv2.HorizontalPodAutoscaler{hpa("keda-hpa-chat", "chat", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.OwnerReferences = []metav1.OwnerReference{{APIVersion: "keda.sh/v1alpha1", Kind: "ScaledObject", Name: "chat-so", UID: "u1"}}
		})}, "scaled_by_scaledobject", "is scaled by ScaledObject chat-so"},
		{"KEDA label", []*autoscalingv2.HorizontalPodAutoscaler{hpa("keda-hpa-chat", "chat", func(h *autoscalingv2.HorizontalPodAutoscaler) {
			h.Labels = map[string]string{"scaledobject.keda.sh/name": "chat"}
		})}, "scaled_by_scaledobject", "is scaled by ScaledObject chat (through HorizontalPodAutoscaler keda-hpa-chat)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var objs []runtime.Object
			for _, h := range c.hpas {
				objs = append(objs, h)
			}
			cl, _, sc := kubefake.New("llm", objs...)
			defer cl.Close()
			sc.Set("llm", kubefake.Deployments, "chat", 2, "app=chat")
			_, err := (&kube.Applier{Cluster: cl}).Apply(context.Background(), chatRef(), 4)
			if kube.Reason(err) != c.reason || !strings.Contains(err.Error(), c.says) {
				t.Errorf("err %v (reason %s), want %s saying %q", err, kube.Reason(err), c.reason, c.says)
			}
			if sc.Updates != 0 || sc.Replicas("llm", kubefake.Deployments, "chat") != 2 {
				t.Errorf("%d updates, replicas %d: want none, 2", sc.Updates, sc.Replicas("llm", kubefake.Deployments, "chat"))
			}
		})
	}
	// An HPA on a StatefulSet of the same name, or in another group, is not this workload's.
	other := hpa("chat-sts", "chat", func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.ScaleTargetRef.Kind = "StatefulSet" })
	if _, found := kube.FindScaler([]*autoscalingv2.HorizontalPodAutoscaler{other}, chatRef()); found {
		t.Error("an HPA on StatefulSet chat counted for Deployment chat")
	}
	v1 := hpa("chat-v1", "chat", func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.ScaleTargetRef.APIVersion = "apps/v1beta2" })
	if s, found := kube.FindScaler([]*autoscalingv2.HorizontalPodAutoscaler{v1}, chatRef()); !found || s.HPA != "chat-v1" {
		t.Error("an HPA naming apps/v1beta2 Deployment chat missed (the version may differ)")
	}
}

// TestPodsForbidden: a namespace whose pods cannot be listed (RBAC) fails
// the read with the API's reason, first after SyncTimeout, then at once.
func TestPodsForbidden(t *testing.T) {
	c, client, _ := kubefake.New("llm")
	defer c.Close()
	c.SyncTimeout = 2 * time.Second
	client.PrependReactor("list", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "", errors.New(`User "system:serviceaccount:infscale:infscale" cannot list resource "pods"`))
	})
	sel := labels.SelectorFromSet(labels.Set{"app": "chat"})
	if _, err := c.Pods(context.Background(), "llm", sel); kube.Reason(err) != "forbidden" || !strings.Contains(err.Error(), "cannot list resource") {
		t.Fatalf("first read: %v (reason %s), want forbidden with the API's message", err, kube.Reason(err))
	}
	start := time.Now()
	if _, err := c.Pods(context.Background(), "llm", sel); kube.Reason(err) != "forbidden" || time.Since(start) > time.Second {
		t.Errorf("second read: %v after %v, want forbidden without waiting out SyncTimeout (2s)", err, time.Since(start))
	}
}

// TestPodsNotFailedByHPAForbidden: the pod and HPA informers of a
// namespace are separate lists; an HPA list refused (a Role granting pods
// but not horizontalpodautoscalers) fails the HPA check, not a pod read
// started after it, which lists fine. The refusal was kept per namespace,
// so the pod read failed at once with the HPAs' 403.
func TestPodsNotFailedByHPAForbidden(t *testing.T) {
	c, client, _ := kubefake.New("llm")
	defer c.Close()
	c.SyncTimeout = 5 * time.Second
	client.PrependReactor("list", "horizontalpodautoscalers", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "autoscaling", Resource: "horizontalpodautoscalers"}, "", errors.New(`User "system:serviceaccount:infscale:infscale" cannot list resource "horizontalpodautoscalers"`))
	})
	if _, _, err := c.ScaledBy(context.Background(), chatRef()); kube.Reason(err) != "forbidden" {
		t.Fatalf("HPA check: %v (reason %s), want forbidden", err, kube.Reason(err))
	}
	sel := labels.SelectorFromSet(labels.Set{"app": "chat"})
	if _, err := c.Pods(context.Background(), "llm", sel); err != nil {
		t.Errorf("pod read after the HPAs' 403: %v, want the pods (their list is allowed)", err)
	}
}
