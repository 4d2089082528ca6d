//go:build replayharness

package replay

import (
	"slices"
	"strings"
	"testing"
	"time"
)

// TestHPAReplicasDefaultBehavior: the consumer of hpa(...) with the HPA's
// default behavior (scaleUp max(4 pods, 100%) per 15 s, window 0;
// scaleDown window 300 s, 100% per 15 s; tolerance 10%), minReplicas 2,
// maxReplicas 20, a reconcile every 15 s, the workload at the HPA's last
// count. By hand (ratio = desired / current):
//
//	  0 s  2 on 2: ratio 1, keep 2
//	 15 s 30 on 2: scaleUp limit max(2+4, 2×2) = 6
//	 30 s 30 on 6: the +4 at 15 s is not after 30-15: limit max(6+4, 12) = 12
//	 45 s 30 on 12: limit max(16, 24) = 24, maxReplicas 20
//	 60 s 21 on 20: ratio 1.05 within 10%: keep 20
//	 75 s 18 on 20: ratio 0.9, the band's edge, within: keep 20
//	 90 s  1 on 20: the scaleDown window holds its highest, 30: 20
//	400 s  1 on 20: nothing after 100 s in the window: 1, minReplicas 2
//	415 s  3 on 2: ratio 1.5: 3 (period start 2 + 18 removed at 400 s: limit 40, max 20)
func TestHPAReplicasDefaultBehavior(t *testing.T) {
	pol, err := ParsePolicy("hpa(running:1),min=2,max=20")
	if err != nil {
		t.Fatal(err)
	}
	steps := []HPAStep{{0, 2, 2}, {15, 30, 2}, {30, 30, 6}, {45, 30, 12}, {60, 21, 20}, {75, 18, 20}, {90, 1, 20}, {400, 1, 20}, {415, 3, 2}}
	got, err := HPAReplicas(pol, time.Unix(0, 0), steps)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{2, 6, 12, 20, 20, 20, 20, 2, 3}; !slices.Equal(got, want) {
		t.Fatalf("replicas %v, want %v", got, want)
	}
}

// TestHPAReplicasSelectPolicy: scaleUp selectPolicy Min over 4 pods and
// 50% per 15 s, scaleDown Disabled (window 0), a reconcile every 15 s. By
// hand: 2 on 2 keeps 2; 20 on 2: min(2+4, ceil(2×1.5)) = 3; 20 on 3 (the
// +1 at 15 s is not after 30-15): min(7, ceil(4.5)) = 5; 20 on 5: min(9,
// ceil(7.5)) = 8; then 1 on 8: scale-down disabled, 8, also at 400 s.
func TestHPAReplicasSelectPolicy(t *testing.T) {
	pol, err := ParsePolicy("hpa(running:1),max=20,uppods=4,uppercent=50,upselect=Min,downwindow=0,downselect=Disabled")
	if err != nil {
		t.Fatal(err)
	}
	steps := []HPAStep{{0, 2, 2}, {15, 20, 2}, {30, 20, 3}, {45, 20, 5}, {60, 1, 8}, {400, 1, 8}}
	got, err := HPAReplicas(pol, time.Unix(0, 0), steps)
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{2, 3, 5, 8, 8, 8}; !slices.Equal(got, want) {
		t.Fatalf("replicas %v, want %v", got, want)
	}
}

// TestHPAReplicasBelowMin: started below minReplicas 3, the HPA sets 3
// without reading the metric (8); 10 s later, with the +2 in the 15 s
// period (start 1), the scale-up limit is max(1+4, 2) = 5.
func TestHPAReplicasBelowMin(t *testing.T) {
	pol, err := ParsePolicy("hpa(running:1),min=3,max=20")
	if err != nil {
		t.Fatal(err)
	}
	got, err := HPAReplicas(pol, time.Unix(0, 0), []HPAStep{{0, 8, 1}, {10, 8, 3}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{3, 5}; !slices.Equal(got, want) {
		t.Fatalf("replicas %v, want %v", got, want)
	}
}

// TestHPAReplicasNoBehavior: an HPA without behavior (behavior=none, the
// controller's normalizeDesiredReplicas), a reconcile every 15 s. By hand:
// 1 on 1 keeps 1; 10: scale-up limit max(2 × 1, 4) = 4; 6 on 4: the
// highest of the 300 s window and the new one, max(1, 10, 6) = 10, limit
// max(8, 4) = 8; 2 on 8: max(10, 2) = 10 (a behavior's stabilisation would
// keep 8: min(max(8, 2), 10)), limit 16: 10; at 400 s the window (100 s,
// 400 s] holds none of them: 2, no scale-down limit. The same sequence 2 s
// apart is deploy/kubee2e's no-behavior-window on the real controller.
func TestHPAReplicasNoBehavior(t *testing.T) {
	pol, err := ParsePolicy("hpa(running:1),behavior=none,max=20")
	if err != nil {
		t.Fatal(err)
	}
	got, err := HPAReplicas(pol, time.Unix(0, 0), []HPAStep{{0, 1, 1}, {15, 10, 1}, {30, 6, 4}, {45, 2, 8}, {400, 2, 10}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{1, 4, 8, 10, 2}; !slices.Equal(got, want) {
		t.Fatalf("replicas %v, want %v", got, want)
	}
	// The window's start counts (the controller drops only what is before
	// it): 10 recorded at 15 s still holds at 315 s, not at 316 s.
	got, err = HPAReplicas(pol, time.Unix(0, 0), []HPAStep{{0, 1, 1}, {15, 10, 1}, {315, 2, 4}, {316, 2, 10}})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int{1, 4, 8, 2}; !slices.Equal(got, want) {
		t.Fatalf("window edge: replicas %v, want %v", got, want)
	}
	for _, bad := range []string{"hpa(running:1),behavior=none,uppods=4", "hpa(running:1),downselect=Min,behavior=none", "hpa(running:1),behavior=some"} {
		if _, err := ParsePolicy(bad); err == nil || !strings.Contains(err.Error(), "behavior") {
			t.Errorf("%s: %v, want an error naming behavior", bad, err)
		}
	}
}

func TestHPAReplicasRefuses(t *testing.T) {
	q, err := ParsePolicy("queue:24")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := HPAReplicas(q, time.Unix(0, 0), nil); err == nil || !strings.Contains(err.Error(), "not hpa(POLICY)") {
		t.Fatalf("HPAReplicas(queue:24) = %v, want not hpa(POLICY)", err)
	}
	h, err := ParsePolicy("hpa(queue:24)")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := HPAReplicas(h, time.Unix(0, 0), []HPAStep{{10, 1, 1}, {5, 1, 1}}); err == nil || !strings.Contains(err.Error(), "step 1: at 5 s, before step 0's 10 s") {
		t.Fatalf("HPAReplicas(steps going back) = %v, want step 1 named", err)
	}
}
