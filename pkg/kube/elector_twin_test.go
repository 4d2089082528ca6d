package kube

import (
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/internal/buftest"
)

// TestElectorTwinIdentity: two replicas given one --leader-elect-identity
// ("same") on one Lease. client-go lets both hold it (each reads the
// other's record as its own), so both wrote. Now each sees a record
// naming it that it did not write, neither may write while both run
// (sampled for a second after they met: never a leader), and the error
// says why (once each has seen a record of the other, a few retry
// periods after they met). With the other stopped, the first leads again within the
// lease duration (2 s) after the twin's last record, plus retries.
func TestElectorTwinIdentity(t *testing.T) {
	client := leaseAPI()
	var logs buftest.Buffer
	log := slog.New(slog.NewTextHandler(&logs, nil))
	a, err := NewElector(client, fastLease("same"), log)
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewElector(client, fastLease("same"), nil)
	if err != nil {
		t.Fatal(err)
	}
	startElector(t, a)
	waitFor(t, "a leads", 2*time.Second, a.IsLeader)
	cancelB, doneB := startElector(t, b)
	// Each notices at its first read of a record the other wrote after
	// its own first write: within a few retry periods.
	waitFor(t, "both see their twin", 3*time.Second, func() bool {
		return !a.IsLeader() && !b.IsLeader() && strings.Contains(logs.String(), "another replica holds the Lease under this identity")
	})
	for end := time.Now().Add(time.Second); time.Now().Before(end); time.Sleep(10 * time.Millisecond) {
		if la, lb := a.IsLeader(), b.IsLeader(); la || lb {
			t.Fatalf("a leader %v, b leader %v while both run under one identity; want neither", la, lb)
		}
	}
	cancelB()
	<-doneB
	waitFor(t, "a leads again", 4*time.Second, a.IsLeader)
}
