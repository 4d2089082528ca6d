package kubee2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// holder is the Lease default/infscale's holderIdentity ("" when absent).
func (c *cluster) holder(t *testing.T) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	l, err := c.client.CoordinationV1().Leases(metav1.NamespaceDefault).Get(ctx, "infscale", metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// scaleTo sets chat's spec.replicas as `kubectl scale` does (the scale
// subresource).
func (c *cluster) scaleTo(t *testing.T, n int32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	deps := c.client.AppsV1().Deployments(metav1.NamespaceDefault)
	sc, err := deps.GetScale(ctx, "chat", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sc.Spec.Replicas = n
	if _, err := deps.UpdateScale(ctx, "chat", sc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// applied counts the decisions s wrote.
func applied(t *testing.T, s *server) int {
	n := 0
	for _, r := range s.records(t) {
		if r.Applied != nil {
			n++
		}
	}
	return n
}

// TestServeLeaseOneWriter: two serve replicas with --leader-elect on one
// Lease both decide 4 for the same pages (2 pods at 20, target 10), but
// only the holder writes; the other sees spec.replicas 2 and stays silent
// (no write, no apply error). When the holder stops (SIGTERM releases the
// Lease) the other takes it and writes.
func TestServeLeaseOneWriter(t *testing.T) {
	c := startCluster(t)
	f, _ := c.busyPair(t)
	cfg := chatConfig(f.Port, "  apply: true\n")
	le := func(id string) []string {
		return []string{"--leader-elect", "--leader-elect-identity", id, "--leader-elect-lease-duration", "4s",
			"--leader-elect-renew-deadline", "3s", "--leader-elect-retry-period", "500ms"}
	}
	sa := c.startServe(t, cfg, le("serve-a")...)
	eventually(t, "serve-a holds the Lease", func() (bool, string) { h := c.holder(t); return h == "serve-a", h })
	c.waitApplied(t, sa, 4)
	sb := c.startServe(t, cfg, le("serve-b")...)

	// Scaled back by hand until serve-b has seen the drift (spec 2, desired
	// 4) at least twice; serve-a restores 4 each time.
	eventually(t, "serve-b sees spec.replicas 2 and decides 4", func() (bool, string) {
		n := 0
		for _, r := range sb.records(t) {
			if r.Observed != nil && *r.Observed == 2 && r.Desired == 4 {
				n++
			}
		}
		if n >= 2 {
			return true, ""
		}
		if c.replicas(t, "chat") == 4 {
			c.scaleTo(t, 2)
		}
		time.Sleep(300 * time.Millisecond)
		return false, fmt.Sprintf("%d such decisions; serve-b last %v", n, sb.last(t))
	})
	c.waitApplied(t, sa, 4)
	if n := applied(t, sb); n != 0 {
		t.Fatalf("serve-b, not the holder, wrote %d times", n)
	}
	for _, r := range sb.records(t) {
		if r.ApplyError != "" {
			t.Fatalf("serve-b recorded an apply error off the Lease: %v", r)
		}
	}
	eventually(t, "serve-a's first write and one after the hand scaling recorded", func() (bool, string) {
		n := applied(t, sa)
		return n >= 2, fmt.Sprintf("%d writes recorded", n)
	})
	if h := c.holder(t); h != "serve-a" {
		t.Fatalf("Lease holder %q, want serve-a", h)
	}

	sa.stop(t)
	eventually(t, "serve-b takes the Lease", func() (bool, string) { h := c.holder(t); return h == "serve-b", h })
	c.scaleTo(t, 2)
	c.waitApplied(t, sb, 4)
	if n := applied(t, sb); n != 1 {
		t.Fatalf("serve-b wrote %d times after taking the Lease, want 1", n)
	}
}
