package kubee2e

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/kube"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// chatRef is the Deployment default/chat as an HPA's scaleTargetRef names it.
var chatRef = kube.Ref{Namespace: metav1.NamespaceDefault, CrossVersionObjectReference: autoscalingv2.CrossVersionObjectReference{
	APIVersion: "apps/v1", Kind: "Deployment", Name: "chat"}}

// newKubeCluster is pkg/kube's Cluster on the test API server.
func (c *cluster) newKubeCluster(t *testing.T) *kube.Cluster {
	t.Helper()
	kc, err := kube.NewCluster(c.config, metav1.NamespaceDefault)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(kc.Close)
	return kc
}

func (c *cluster) createDeployment(t *testing.T, name string, replicas int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := c.client.AppsV1().Deployments(metav1.NamespaceDefault).Create(ctx, deployment(name, replicas), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (c *cluster) replicas(t *testing.T, name string) int32 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d, err := c.client.AppsV1().Deployments(metav1.NamespaceDefault).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return *d.Spec.Replicas
}

// TestClusterScaleAndPods: pkg/kube reads spec.replicas and the selector
// from the scale subresource and lists the selector's pods from its
// informer as they are created, turn Ready or unready and are deleted;
// a pod of another app is never listed.
func TestClusterScaleAndPods(t *testing.T) {
	c := startCluster(t)
	c.createDeployment(t, "chat", 3)
	kc := c.newKubeCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	w, err := kc.Scale(ctx, chatRef)
	if err != nil {
		t.Fatal(err)
	}
	if w.Replicas != 3 || w.Selector == nil || w.Selector.String() != "app=chat" || w.Resource.String() != "deployments.apps" {
		t.Fatalf("workload %+v, want spec.replicas 3, selector app=chat, resource deployments.apps", w)
	}

	state := func(want string) func() (bool, string) {
		return func() (bool, string) {
			pods, err := kc.Pods(ctx, metav1.NamespaceDefault, w.Selector)
			if err != nil {
				return false, err.Error()
			}
			var got []string
			for _, p := range pods {
				s := "pending"
				if kube.Ready(p) {
					s = "ready"
				}
				got = append(got, p.Name+"="+s)
			}
			return strings.Join(got, " ") == want, strings.Join(got, " ")
		}
	}
	c.createPod(t, "chat", "chat-a", 8000, "127.0.0.2", true)
	c.createPod(t, "chat", "chat-b", 8000, "", false) // scheduled, no IP yet
	c.createPod(t, "other", "other-a", 8000, "127.0.0.9", true)
	eventually(t, "two chat pods, a Ready", state("chat-a=ready chat-b=pending"))

	b := c.setPodStatus(t, mustPod(t, c, "chat-b"), "127.0.0.3", true)
	eventually(t, "chat-b Ready", state("chat-a=ready chat-b=ready"))
	c.setPodStatus(t, mustPod(t, c, "chat-a"), "127.0.0.2", false)
	eventually(t, "chat-a unready", state("chat-a=pending chat-b=ready"))
	c.deletePod(t, "chat-a")
	eventually(t, "chat-a gone", state("chat-b=ready"))

	u, err := kube.PodURL(b, intstr.FromString("http"), "/metrics")
	if err != nil || u != "http://127.0.0.3:8000/metrics" {
		t.Fatalf("PodURL = %q, %v; want http://127.0.0.3:8000/metrics", u, err)
	}
}

func mustPod(t *testing.T, c *cluster, name string) *corev1.Pod {
	t.Helper()
	p, err := c.client.CoreV1().Pods(metav1.NamespaceDefault).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestApplierWritesAndRefuses: Apply writes spec.replicas through the
// scale subresource (and nothing when it already holds the count), then
// refuses, naming it, once an HPA targets the Deployment, and names the
// KEDA ScaledObject when the HPA is KEDA's.
func TestApplierWritesAndRefuses(t *testing.T) {
	c := startCluster(t)
	c.createDeployment(t, "chat", 2)
	a := &kube.Applier{Cluster: c.newKubeCluster(t)}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	got, err := a.Apply(ctx, chatRef, 4)
	if err != nil || got != (kube.Applied{From: 2, Wrote: true}) {
		t.Fatalf("Apply(4) = %+v, %v; want from 2, wrote", got, err)
	}
	if n := c.replicas(t, "chat"); n != 4 {
		t.Fatalf("spec.replicas %d after Apply(4)", n)
	}
	if got, err := a.Apply(ctx, chatRef, 4); err != nil || got != (kube.Applied{From: 4, Wrote: false}) {
		t.Fatalf("Apply(4) again = %+v, %v; want from 4, not written", got, err)
	}

	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "chat-hpa", Namespace: metav1.NamespaceDefault},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: chatRef.CrossVersionObjectReference,
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 10,
		},
	}
	hpas := c.client.AutoscalingV2().HorizontalPodAutoscalers(metav1.NamespaceDefault)
	if _, err := hpas.Create(ctx, hpa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// The refusal reads the HPA informer: wait until it has the HPA (a
	// write in the watch's latency after the HPA's creation is not refused).
	eventually(t, "the HPA in the informer", func() (bool, string) {
		by, found, err := a.Cluster.ScaledBy(ctx, chatRef)
		return found && by.HPA == "chat-hpa", fmt.Sprint(by, found, err)
	})
	_, err = a.Apply(ctx, chatRef, 6)
	var se *kube.ScaledError
	if !errors.As(err, &se) || se.By.HPA != "chat-hpa" || kube.Reason(err) != "scaled_by_hpa" || !strings.Contains(err.Error(), "HorizontalPodAutoscaler chat-hpa") {
		t.Fatalf("Apply(6) under HPA chat-hpa = %v, want a ScaledError naming it", err)
	}
	if n := c.replicas(t, "chat"); n != 4 {
		t.Fatalf("spec.replicas %d after a refused Apply(6), want 4 untouched", n)
	}

	// KEDA labels the HPA it creates with its ScaledObject's name.
	h, err := hpas.Get(ctx, "chat-hpa", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	h.Labels = map[string]string{"scaledobject.keda.sh/name": "chat-so"}
	if _, err := hpas.Update(ctx, h, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "Apply refused naming the ScaledObject", func() (bool, string) {
		_, err := a.Apply(ctx, chatRef, 6)
		return kube.Reason(err) == "scaled_by_scaledobject" && strings.Contains(fmt.Sprint(err), "ScaledObject chat-so"), fmt.Sprint(err)
	})

	// Only the leader writes.
	if err := hpas.Delete(ctx, "chat-hpa", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	a.IsLeader = func() bool { return false }
	if _, err := a.Apply(ctx, chatRef, 1); !errors.Is(err, kube.ErrNotLeader) {
		t.Fatalf("Apply off the lease = %v, want ErrNotLeader", err)
	}
	if n := c.replicas(t, "chat"); n != 4 {
		t.Fatalf("spec.replicas %d after Apply off the lease, want 4", n)
	}
}

// TestSetReplicasConflict: another writer changes the Deployment between
// infscale's read of the scale and its write; the API server answers 409
// Conflict, and SetReplicas reads again and writes the same decision.
func TestSetReplicasConflict(t *testing.T) {
	c := startCluster(t)
	c.createDeployment(t, "chat", 2)
	var puts, conflicts atomic.Int32
	cfg := rest.CopyConfig(c.config)
	cfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method == http.MethodPut && strings.HasSuffix(req.URL.Path, "/deployments/chat/scale") && puts.Add(1) == 1 {
				// The other writer: kubectl edits the Deployment's labels.
				d, err := c.client.AppsV1().Deployments(metav1.NamespaceDefault).Get(req.Context(), "chat", metav1.GetOptions{})
				if err != nil {
					return nil, err
				}
				d.Labels = map[string]string{"edited": "yes"}
				if _, err := c.client.AppsV1().Deployments(metav1.NamespaceDefault).Update(req.Context(), d, metav1.UpdateOptions{}); err != nil {
					return nil, err
				}
			}
			resp, err := rt.RoundTrip(req)
			if err == nil && resp.StatusCode == http.StatusConflict {
				conflicts.Add(1)
			}
			return resp, err
		})
	}
	kc, err := kube.NewCluster(cfg, metav1.NamespaceDefault)
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	from, wrote, err := kc.SetReplicas(ctx, chatRef, 5)
	if err != nil || !wrote || from != 2 {
		t.Fatalf("SetReplicas(5) = from %d, wrote %v, %v; want from 2, wrote", from, wrote, err)
	}
	if conflicts.Load() != 1 || puts.Load() != 2 {
		t.Fatalf("%d conflicts in %d PUTs, want 1 in 2", conflicts.Load(), puts.Load())
	}
	d, err := c.client.AppsV1().Deployments(metav1.NamespaceDefault).Get(ctx, "chat", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 5 || d.Labels["edited"] != "yes" {
		t.Fatalf("spec.replicas %d, labels %v: want 5 and the other writer's edit kept", *d.Spec.Replicas, d.Labels)
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// createHPA creates an autoscaling/v2 HPA on Deployment chat with labels.
func (c *cluster) createHPA(t *testing.T, name string, labels map[string]string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault, Labels: labels},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: chatRef.CrossVersionObjectReference,
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 10,
		},
	}
	if _, err := c.client.AutoscalingV2().HorizontalPodAutoscalers(metav1.NamespaceDefault).Create(ctx, hpa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func (c *cluster) deleteHPA(t *testing.T, name string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.client.AutoscalingV2().HorizontalPodAutoscalers(metav1.NamespaceDefault).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
}
