package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestSetDeletionCostsForbidden: without RBAC patch on pods every patch of
// the namespace is refused alike; the first refusal ends the cycle's
// patches (the other 49 would only be refused again) and the error is one
// short line: how many were not set, one example, the rule to add. It was
// the 50 refusals joined, some 10 kB on one log line.
func TestSetDeletionCostsForbidden(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		pa := a.(k8stesting.PatchAction)
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, pa.GetName(),
			fmt.Errorf(`User "system:serviceaccount:infscale:infscale" cannot patch resource "pods" in API group "" in the namespace "llm"`))
	})
	var patches []CostPatch
	for i := range DefaultMaxCostPatches {
		patches = append(patches, CostPatch{Pod: fmt.Sprintf("chat-%02d", i), To: int32(50 - i)})
	}
	n, err := SetDeletionCosts(context.Background(), client, "llm", patches)
	if n != 0 || err == nil {
		t.Fatalf("%d patched, err %v; want 0 and an error", n, err)
	}
	if got := len(client.Actions()); got != 1 {
		t.Errorf("%d patch requests, want 1: a refusal by RBAC ends the cycle's patches", got)
	}
	if Reason(err) != "forbidden" || !apierrors.IsForbidden(errors.Unwrap(err)) {
		t.Errorf("reason %q (unwrapped %v), want forbidden", Reason(err), errors.Unwrap(err))
	}
	msg := err.Error()
	for _, want := range []string{
		"50 of 50 pod-deletion-cost patches not made (1 failed, 49 not tried)",
		`e.g. pod llm/chat-00: set controller.kubernetes.io/pod-deletion-cost=50: pods "chat-00" is forbidden`,
		`RBAC: allow verb patch on resource pods (core group) in namespace llm`,
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error lacks %q:\n%s", want, msg)
		}
	}
	if strings.Count(msg, "forbidden") > 1 || len(msg) > 600 {
		t.Errorf("error is %d bytes, %d refusals: want one example:\n%s", len(msg), strings.Count(msg, "forbidden"), msg)
	}
}

// TestSetDeletionCostsSomeFail: failures that are the pod's own (here a
// server error on two of four) do not stop the others; the error counts
// them and gives the first.
func TestSetDeletionCostsSomeFail(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if name := a.(k8stesting.PatchAction).GetName(); name == "p1" || name == "p3" {
			return true, nil, apierrors.NewInternalError(fmt.Errorf("etcd hiccup on %s", name))
		}
		return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "pods"}, "gone") // skipped, not a failure
	})
	patches := []CostPatch{{Pod: "p0", To: 4}, {Pod: "p1", To: 3}, {Pod: "p2", To: 2}, {Pod: "p3", To: 1}}
	_, err := SetDeletionCosts(context.Background(), client, "llm", patches)
	if got := len(client.Actions()); got != 4 {
		t.Errorf("%d patch requests, want all 4", got)
	}
	if err == nil || !strings.Contains(err.Error(), "2 of 4 pod-deletion-cost patches not made (2 failed, 0 not tried)") ||
		!strings.Contains(err.Error(), "e.g. pod llm/p1:") || strings.Contains(err.Error(), "p3") || strings.Contains(err.Error(), "RBAC") {
		t.Errorf("err %v; want 2 of 4 failed, p1 the example, no RBAC hint", err)
	}
}

// TestSetDeletionCostsWebhookDenied: a 403 from an admission webhook (a
// policy engine refusing the annotation on one pod, as controller-runtime's
// admission.Denied answers) is that pod's failure, not RBAC's: the other
// pods are patched (3 of 4) and the error names no RBAC rule to add.
func TestSetDeletionCostsWebhookDenied(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if name := a.(k8stesting.PatchAction).GetName(); name == "chat-00" {
			return true, nil, &apierrors.StatusError{ErrStatus: metav1.Status{Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden,
				Message: `admission webhook "validation.gatekeeper.sh" denied the request: [protected-pods] pod chat-00 may not be annotated`}}
		}
		return true, nil, nil
	})
	var patches []CostPatch
	for i := range 4 {
		patches = append(patches, CostPatch{Pod: fmt.Sprintf("chat-%02d", i), To: int32(4 - i)})
	}
	n, err := SetDeletionCosts(context.Background(), client, "llm", patches)
	if n != 3 || err == nil {
		t.Fatalf("%d patched, err %v; want 3 and an error", n, err)
	}
	if msg := err.Error(); !strings.Contains(msg, "1 of 4 pod-deletion-cost patches not made (1 failed, 0 not tried)") || strings.Contains(msg, "RBAC") {
		t.Errorf("error %q; want 1 of 4 failed, and no RBAC rule (the webhook refused, not RBAC)", msg)
	}
}

// TestSetDeletionCostsShedding: an API server shedding load (API Priority
// and Fairness's 429, a 503) would refuse the other pods' patches alike:
// the first such answer ends the cycle's patches (1 request sent of 4,
// 3 not tried), rather than adding the others to its load every cycle.
func TestSetDeletionCostsShedding(t *testing.T) {
	for _, shed := range []error{
		apierrors.NewTooManyRequests("the server has received too many requests", 1),
		apierrors.NewServiceUnavailable("the server is currently unable to handle the request"),
	} {
		client := fake.NewClientset()
		client.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) { return true, nil, shed })
		patches := []CostPatch{{Pod: "p0", To: 4}, {Pod: "p1", To: 3}, {Pod: "p2", To: 2}, {Pod: "p3", To: 1}}
		n, err := SetDeletionCosts(context.Background(), client, "llm", patches)
		if got := len(client.Actions()); got != 1 || n != 0 {
			t.Errorf("%v: %d patch requests, %d patched; want 1 and 0", shed, got, n)
		}
		if err == nil || !strings.Contains(err.Error(), "4 of 4 pod-deletion-cost patches not made (1 failed, 3 not tried), e.g. pod llm/p0:") || Reason(err) != "unavailable" {
			t.Errorf("err %v (reason %s); want 1 failed, 3 not tried, reason unavailable", err, Reason(err))
		}
	}
}
