package serve

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/kube"
)

// forbiddenCosts sets deletion costs through kube.SetDeletionCosts on a
// client without RBAC patch on pods (every patch refused), for 50 pods.
type forbiddenCosts struct{ client *fake.Clientset }

func (f forbiddenCosts) SetDeletionCosts(ctx context.Context, t *config.Target, _ map[string]float64) (int, int, error) {
	var patches []kube.CostPatch
	for i := range kube.DefaultMaxCostPatches {
		patches = append(patches, kube.CostPatch{Pod: fmt.Sprintf("%s-%02d", t.Name, i), To: int32(50 - i)})
	}
	n, err := kube.SetDeletionCosts(ctx, f.client, "llm", patches)
	return n, 0, err
}

func (f forbiddenCosts) Write(context.Context, *config.Target, int) (bool, error) { return true, nil }

// TestCostsForbiddenOneLine: without RBAC patch on pods a scale-down's
// cost patches are refused; the cycle logs one line for the target with
// the count, one example and the rule to add (it logged the 50 refusals
// joined), and counts one infscale_deletion_cost_errors_total{reason=
// "forbidden"} per cycle.
func TestCostsForbiddenOneLine(t *testing.T) {
	client := fake.NewClientset()
	client.PrependReactor("patch", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, a.(k8stesting.PatchAction).GetName(),
			fmt.Errorf(`User "system:serviceaccount:infscale:infscale" cannot patch resource "pods" in API group "" in the namespace "llm"`))
	})
	src := &fakeSource{}
	for _, n := range []string{"a", "b", "c"} {
		r := load(4, 10, 0) // ceil(10/24) = 1 < 4: a scale-down, costs first
		r.Outstanding = map[string]float64{n + "-0": 10}
		src.set(n, r)
	}
	w := newHangingWrites("", "")
	l, m, logs, _ := writeLoop(t, src, w, time.Second)
	l.costs, l.writer = forbiddenCosts{client}, forbiddenCosts{client}
	l.Cycle(context.Background())

	var lines []string
	for _, ln := range strings.Split(logs.String(), "\n") {
		if strings.Contains(ln, "target=a ") && strings.Contains(ln, "deletion cost") {
			lines = append(lines, ln)
		}
	}
	if len(lines) != 1 {
		t.Fatalf("%d deletion-cost lines for a, want 1:\n%s", len(lines), logs.String())
	}
	for _, want := range []string{
		`level=ERROR msg="pod deletion costs not all set" target=a set=0`,
		`50 of 50 pod-deletion-cost patches not made (1 failed, 49 not tried), e.g. pod llm/a-00`,
		`RBAC: allow verb patch on resource pods (core group) in namespace llm`,
		`reason=forbidden`,
	} {
		if !strings.Contains(lines[0], want) {
			t.Errorf("line lacks %q:\n%s", want, lines[0])
		}
	}
	if n := strings.Count(lines[0], "forbidden"); n > 3 || len(lines[0]) > 1000 {
		t.Errorf("line of %d bytes, %d forbidden: want one example:\n%s", len(lines[0]), n, lines[0])
	}
	if got := counterValue(t, m, "deletion_cost_errors_total", "a", "forbidden"); got != 1 {
		t.Errorf("deletion_cost_errors_total{a, forbidden} = %v, want 1", got)
	}
	if got := len(client.Actions()); got != 3 {
		t.Errorf("%d patch requests, want 3: one per target, the first refusal ends its cycle's patches", got)
	}
}
