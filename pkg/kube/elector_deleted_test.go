package kube

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestElectorLeaseDeleted: the Lease deleted by hand (kubectl delete
// lease) while a leads and b follows: one of them creates it anew and
// leads, the other follows, and from then on never both lead at once.
func TestElectorLeaseDeleted(t *testing.T) {
	client := leaseAPI()
	a := leading(t, client, fastLease("a"))
	b, err := NewElector(client, fastLease("b"), nil)
	if err != nil {
		t.Fatal(err)
	}
	startElector(t, b)
	time.Sleep(300 * time.Millisecond) // b has read a's record
	if err := client.CoordinationV1().Leases("llm").Delete(context.Background(), "infscale", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// Within a retry period (100 to 220 ms) both have tried again; a
	// renew deadline (600 ms) bounds a's leadership if it lost the race.
	time.Sleep(time.Second)
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if la, lb := a.IsLeader(), b.IsLeader(); la == lb {
			t.Fatalf("a leads %v, b leads %v: want exactly one", la, lb)
		}
	}
	l, err := client.CoordinationV1().Leases("llm").Get(context.Background(), "infscale", metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil {
		t.Fatalf("the Lease after the deletion: %v %v", l, err)
	}
	if h := *l.Spec.HolderIdentity; (h == "a") != a.IsLeader() || (h == "b") != b.IsLeader() {
		t.Errorf("the Lease names %s; a leads %v, b %v", h, a.IsLeader(), b.IsLeader())
	}
}
