package kube_test

import (
	"context"
	"strings"
	"testing"

	"github.com/infscale/infscale/pkg/kube"
	"github.com/infscale/infscale/pkg/kube/kubefake"
)

// A scale subresource that answers a negative count (a broken aggregated
// API or proxy) is not written over: the write's own read is refused as
// Scale refuses it, nothing is sent, and the reason is bad_data.
func TestApplyRefusesGarbageScale(t *testing.T) {
	c, _, sc := kubefake.New("llm")
	sc.Set("llm", kubefake.Deployments, "chat", -3, "app=chat")
	if _, err := c.Scale(context.Background(), chatRef()); kube.Reason(err) != "bad_data" {
		t.Errorf("Scale's Reason = %q (%v), want bad_data", kube.Reason(err), err)
	}
	a := &kube.Applier{Cluster: c}
	got, err := a.Apply(context.Background(), chatRef(), 2)
	if err == nil || got.Wrote || sc.Updates != 0 {
		t.Fatalf("Apply over spec.replicas -3 = %+v, %v, %d updates; want refused, nothing sent", got, err, sc.Updates)
	}
	if !strings.Contains(err.Error(), "a replica count cannot be negative") {
		t.Errorf("error %q does not say why", err)
	}
	if r := kube.Reason(err); r != "bad_data" {
		t.Errorf("Reason = %q, want bad_data", r)
	}
	// Recovers at the first good answer.
	sc.Set("llm", kubefake.Deployments, "chat", 3, "app=chat")
	if got, err := a.Apply(context.Background(), chatRef(), 2); err != nil || !got.Wrote || got.From != 3 {
		t.Errorf("after a good answer: %+v, %v; want 3 -> 2 written", got, err)
	}
}
