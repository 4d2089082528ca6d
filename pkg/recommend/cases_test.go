package recommend

import (
	"bufio"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/infscale/infscale/internal/sharedtest"
)

// sharedCases is ../shared/testdata/cases from the repository root.
func sharedCases(t *testing.T) string {
	t.Helper()
	return sharedtest.Path(t, "cases")
}

// readTSV reads a case's rows of numbers, skipping # comments.
func readTSV(t *testing.T, path string) [][]float64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows [][]float64
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var row []float64
		for _, field := range strings.Fields(line) {
			v, err := strconv.ParseFloat(field, 64)
			if err != nil {
				t.Fatalf("%s: %q: %v", path, line, err)
			}
			row = append(row, v)
		}
		rows = append(rows, row)
	}
	return rows
}

// C11 (11-hpa-tolerance.expected.md): the HPA's dead band, with the
// inclusive range check pinned for the float-sensitive row 3.
func TestCaseC11Tolerance(t *testing.T) {
	rows := readTSV(t, filepath.Join(sharedCases(t), "11-hpa-tolerance.tsv"))
	// expected.md: row 1 41/(4×10) = 1.025 → 10; row 2 24/(1×22) = 1.0909 →
	// 22; row 3 44/(4×10) = 1.1000000000000000888 <= 1.0+0.1 → 10.
	want := []int{10, 22, 10}
	// and the plain recommendation reported apart: ceil(41/4) = 11,
	// ceil(24/1) = 24, ceil(44/4) = 11.
	wantRaw := []int{11, 24, 11}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for i, r := range rows {
		cur, total, target, tol := int(r[0]), r[1], r[2], r[3]
		p := &Policy{Metrics: []Metric{{Signal: SignalQueue, Target: target}}, Min: 1, Max: 100, Tolerance: &Tolerance{Up: tol, Down: tol}}
		mustValidate(t, p)
		d := Decide(p, queueObs(cur, total), nil, at(1000))
		if d.Desired != want[i] || d.Reason != ReasonTolerance || d.Raw[0].Replicas != wantRaw[i] {
			t.Errorf("row %d %v: desired %d (%s) raw %d, want %d (tolerance) raw %d\n%s", i+1, r, d.Desired, d.Reason, d.Raw[0].Replicas, want[i], wantRaw[i], stepsText(d))
		}
	}
}

// C17 (17-kv-low-while-queue-grows): KV stays near 0.32 while waiting
// grows; a KV-only policy never scales up, a waiting policy does.
func TestCaseC17KVLowWhileQueueGrows(t *testing.T) {
	rows := readTSV(t, filepath.Join(sharedCases(t), "17-kv-low-while-queue-grows.tsv"))
	obsAt := func(r []float64, cur int) Observation {
		return Observation{Current: cur, Running: r[1], Waiting: r[2], Held: nan, KV: r[3], CPU: nan, TTFT: nan}
	}

	// KV only (target 0.8): kv/0.8 ≈ 0.4 → never above the current 2.
	kv := &Policy{Metrics: []Metric{{Signal: SignalKV, Target: 0.8}}, Min: 1, Max: 20}
	mustValidate(t, kv)
	var st State
	for _, r := range rows {
		if d := Decide(kv, obsAt(r, 2), &st, at(int64(r[0]))); d.Desired > 2 {
			t.Errorf("kv-only at t=%v scaled up to %d", r[0], d.Desired)
		}
	}

	// waiting:10 with kv:0.8, max 20, the consumer following:
	// t=0   waiting 0 → 0; kv 0.31/0.8 = 0.3875 × 1 → 1: 1
	// t=60  waiting 80/10 = 8; limit from 1 max(1+4, 2) = 5: 5 (rate-limited)
	// t=120 waiting 170/10 = 17; limit from 5 max(9, 10) = 10: 10
	// t=180 waiting 260/10 = 26; limit max(14, 20) = 20 = max: 20 (max)
	// t=240 waiting 350/10 = 35 capped by max 20: 20 (max)
	both := &Policy{Metrics: []Metric{{Signal: SignalWaiting, Target: 10}, {Signal: SignalKV, Target: 0.8}}, Min: 1, Max: 20}
	mustValidate(t, both)
	want := []struct {
		n int
		r Reason
	}{{1, ReasonMetric}, {5, ReasonScaleUpLimit}, {10, ReasonScaleUpLimit}, {20, ReasonMax}, {20, ReasonMax}}
	st = State{}
	cur := 1
	for i, r := range rows {
		d := Decide(both, obsAt(r, cur), &st, at(int64(r[0])))
		expect(t, d, want[i].n, want[i].r)
		cur = d.Desired
	}
}
