package kubee2e

import (
	"context"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/infscale/infscale/pkg/kube"
)

// TestScaleTargetWithoutScale: a scaleTargetRef to an object that exists
// but whose kind serves no scale subresource (a Job; an InferencePool, the
// upstream CRD, which declares none) is reason no_scale, saying so (it
// was not_found, "inferencepools... "chat" not found" for a pool that
// exists); a Deployment that does not exist, or is deleted between two
// reads, stays not_found; nothing is written to any of them.
func TestScaleTargetWithoutScale(t *testing.T) {
	c := startCluster(t)
	dyn := c.installPoolCRD(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := dyn.Resource(kube.InferencePools).Namespace(metav1.NamespaceDefault).Create(ctx, pool("chat", map[string]any{"app": "chat"}, 8000), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "chat"}, Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "x"}}}}}}
	if _, err := c.client.BatchV1().Jobs(metav1.NamespaceDefault).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	c.createDeployment(t, "chat", 2)
	kc := c.newKubeCluster(t)
	a := &kube.Applier{Cluster: kc}
	ref := func(apiVersion, kind, name string) kube.Ref {
		return kube.Ref{Namespace: metav1.NamespaceDefault, CrossVersionObjectReference: autoscalingv2.CrossVersionObjectReference{APIVersion: apiVersion, Kind: kind, Name: name}}
	}
	for _, tc := range []struct {
		ref          kube.Ref
		reason, says string
	}{
		{ref("inference.networking.k8s.io/v1", "InferencePool", "chat"), "no_scale",
			"InferencePool default/chat: inferencepools.inference.networking.k8s.io has no scale subresource (inferencepools/scale is not served by inference.networking.k8s.io/v1)"},
		{ref("batch/v1", "Job", "chat"), "no_scale", "Job default/chat: jobs.batch has no scale subresource (jobs/scale is not served by batch/v1)"},
		{ref("apps/v1", "Deployment", "nope"), "not_found", `deployments.apps "nope" not found`},
	} {
		_, err := kc.Scale(ctx, tc.ref)
		if kube.Reason(err) != tc.reason || err == nil || !strings.Contains(err.Error(), tc.says) {
			t.Errorf("Scale %s: reason %s, %v; want %s saying %q", tc.ref, kube.Reason(err), err, tc.reason, tc.says)
		}
		if _, err := a.Apply(ctx, tc.ref, 3); kube.Reason(err) != tc.reason {
			t.Errorf("Apply %s: reason %s, %v; want %s", tc.ref, kube.Reason(err), err, tc.reason)
		}
	}
	if _, err := kc.Scale(ctx, ref("inference.networking.k8s.io/v1", "InferencePool", "chat")); err == nil || !strings.Contains(err.Error(), "an InferencePool is named in inferencePoolRef") {
		t.Errorf("InferencePool: %v; want the hint to name it in inferencePoolRef", err)
	}

	// The Deployment deleted between two reads: not_found, nothing created.
	chat := ref("apps/v1", "Deployment", "chat")
	if w, err := kc.Scale(ctx, chat); err != nil || w.Replicas != 2 {
		t.Fatalf("Scale chat: %+v, %v; want 2", w, err)
	}
	if err := c.client.AppsV1().Deployments(metav1.NamespaceDefault).Delete(ctx, "chat", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := kc.Scale(ctx, chat); kube.Reason(err) != "not_found" {
		t.Errorf("Scale after the delete: reason %s, %v; want not_found", kube.Reason(err), err)
	}
	if _, err := a.Apply(ctx, chat, 4); kube.Reason(err) != "not_found" {
		t.Errorf("Apply after the delete: reason %s, %v; want not_found", kube.Reason(err), err)
	}
	if _, err := c.client.AppsV1().Deployments(metav1.NamespaceDefault).Get(ctx, "chat", metav1.GetOptions{}); err == nil {
		t.Error("Apply after the delete created the Deployment")
	}
}
