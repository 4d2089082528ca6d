package kubee2e

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// startRBACCluster is an API server that authorizes with RBAC and knows
// the user "infscale" by a static token; serve gets that user's
// kubeconfig.
func startRBACCluster(t *testing.T) *cluster {
	t.Helper()
	tokens := filepath.Join(t.TempDir(), "tokens.csv")
	if err := os.WriteFile(tokens, []byte("infscale-token,infscale,1001\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, "--authorization-mode=RBAC", "--token-auth-file="+tokens)
	c.token = "infscale-token"
	return c
}

// grant creates Role infscale with rules in namespace default, bound to
// the user infscale.
func (c *cluster) grant(t *testing.T, rules []rbacv1.PolicyRule) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ns := metav1.NamespaceDefault
	if _, err := c.client.RbacV1().Roles(ns).Create(ctx, &rbacv1.Role{ObjectMeta: metav1.ObjectMeta{Name: "infscale", Namespace: ns}, Rules: rules}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	rb := &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "infscale", Namespace: ns},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: "infscale"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "infscale"}},
	}
	if _, err := c.client.RbacV1().RoleBindings(ns).Create(ctx, rb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// The rules docs/kubernetes.md and docs/ha.md give per mode (the chart's:
// the workload's scale and serve's Lease by name).
var (
	readOnlyRules = []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"deployments/scale"}, ResourceNames: []string{"chat"}, Verbs: []string{"get"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch"}},
	}
	writerRules = []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"deployments/scale"}, ResourceNames: []string{"chat"}, Verbs: []string{"get", "update"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"list", "watch", "patch"}},
		{APIGroups: []string{"autoscaling"}, Resources: []string{"horizontalpodautoscalers"}, Verbs: []string{"list", "watch"}},
		// The chart's: serve's own Lease by name, create unnamed (RBAC cannot name it).
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, ResourceNames: []string{"infscale"}, Verbs: []string{"get", "update"}},
		{APIGroups: []string{"coordination.k8s.io"}, Resources: []string{"leases"}, Verbs: []string{"create"}},
	}
)

// TestServeLeastPrivilegeRBAC: serve as a user holding only the documented
// Role of each mode. With apply, pod deletion cost and leases (the
// deletion-cost scenario: costs 5, 1, 3, desired 1 of 3) every write goes
// through: the Lease taken, the costs set, spec.replicas written.
func TestServeLeastPrivilegeRBAC(t *testing.T) {
	c := startRBACCluster(t)
	c.grant(t, writerRules)
	f := c.idleTrio(t)
	s := c.startServe(t, chatConfig(f.Port, "  apply: true\n  pod_deletion_cost: true\n"),
		"--leader-elect", "--leader-elect-identity", "serve-a", "--leader-elect-retry-period", "500ms")
	c.waitReplicas(t, s, 1)
	if h := c.holder(t); h != "serve-a" {
		t.Fatalf("Lease holder %q, want serve-a", h)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := c.client.CoreV1().Pods(metav1.NamespaceDefault).Get(ctx, "chat-b", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Annotations[corev1.PodDeletionCost]; got != "1" {
		t.Fatalf("chat-b %s = %q, want 1", corev1.PodDeletionCost, got)
	}
	if strings.Contains(s.log(), "forbidden") {
		t.Fatalf("serve was refused something:\n%s", s.log())
	}
}

// TestServeReadOnlyRBAC: with the read-only Role serve reads the scale and
// the pods and decides (desired 4 for 2 pods at 20), and a write it is
// not allowed (apply: true) is a decision's apply_error "forbidden",
// spec.replicas untouched.
func TestServeReadOnlyRBAC(t *testing.T) {
	c := startRBACCluster(t)
	c.grant(t, readOnlyRules)
	f, _ := c.busyPair(t)

	s := c.startServe(t, chatConfig(f.Port, ""))
	eventually(t, "a decision on the pods' pages", func() (bool, string) {
		r := s.last(t)
		return r.Desired == 4 && r.Signals.Queue != nil && *r.Signals.Queue == 40, r.String()
	})
	s.stop(t)

	w := c.startServe(t, chatConfig(f.Port, "  apply: true\n"))
	eventually(t, "apply refused by RBAC", func() (bool, string) {
		r := w.last(t)
		return r.Desired == 4 && strings.Contains(r.ApplyError, "forbidden"), r.String()
	})
	if got := c.replicas(t, "chat"); got != 2 {
		t.Fatalf("spec.replicas %d, want 2", got)
	}
}
