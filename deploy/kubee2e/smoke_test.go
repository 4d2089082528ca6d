package kubee2e

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// deployment is a Deployment named name in namespace default whose pods
// carry app=name, with the given spec.replicas.
func deployment(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "vllm", Image: "vllm/vllm-openai"}}},
			},
		},
	}
}

// TestAPIServerScaleSubresource checks the harness itself: the API server
// stores a Deployment and serves its scale subresource, whose spec.replicas
// is the Deployment's and whose status.selector is its label selector.
func TestAPIServerScaleSubresource(t *testing.T) {
	c := startCluster(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	deps := c.client.AppsV1().Deployments(metav1.NamespaceDefault)
	if _, err := deps.Create(ctx, deployment("chat", 3), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sc, err := deps.GetScale(ctx, "chat", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if sc.Spec.Replicas != 3 || sc.Status.Selector != "app=chat" {
		t.Fatalf("scale: spec.replicas %d selector %q, want 3 and app=chat", sc.Spec.Replicas, sc.Status.Selector)
	}
	sc.Spec.Replicas = 5
	if _, err := deps.UpdateScale(ctx, "chat", sc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	d, err := deps.Get(ctx, "chat", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *d.Spec.Replicas != 5 {
		t.Fatalf("after UpdateScale(5) the Deployment has spec.replicas %d", *d.Spec.Replicas)
	}
}
