package serve

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/recommend"
)

// loopWithMax is newTestLoop with max replicas maxR for both targets.
func loopWithMax(t *testing.T, src Source, store *Store, maxR string) (*Loop, *Metrics) {
	t.Helper()
	m := NewMetrics(prometheus.NewRegistry(), "test")
	l := newLoop(t, LoopOptions{Source: src, Metrics: m, Interval: 15 * time.Second, Store: store})
	if err := l.SetConfig(context.Background(), configWithMax(t, maxR)); err != nil {
		t.Fatal(err)
	}
	return l, m
}

func configWithMax(t *testing.T, maxR string) *config.File {
	t.Helper()
	cfg, err := config.Parse([]byte(strings.ReplaceAll(loopConfig, "max: 8", "max: "+maxR)), "loop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// queryErrors is infscale_query_errors_total{target, reason}.
func queryErrors(m *Metrics, target, reason string) float64 {
	m.table.mu.Lock()
	defer m.table.mu.Unlock()
	if tg, ok := m.table.targets[target]; ok {
		for _, c := range tg.queryErrors {
			if c.label.GetValue() == reason {
				return c.value
			}
		}
	}
	return 0
}

// hasDesired reports whether target exports infscale_desired_replicas.
func hasDesired(m *Metrics, target string) bool {
	m.table.mu.Lock()
	defer m.table.mu.Unlock()
	tg, ok := m.table.targets[target]
	return ok && !math.IsNaN(tg.desired)
}

func writeState(t *testing.T, dir, target, body string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, target+".json"), []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRestoreAbsurdDesired: desired 99999999999 is above the int32 bound
// (2147483647) of a replica count: the file is refused, logged, counted
// under reason state_read, and the target starts fresh (no desired series
// until it decides; the tester saw 9.9999999999e+10 exported).
func TestRestoreAbsurdDesired(t *testing.T) {
	dir := t.TempDir()
	store, err := NewStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UTC().Format(time.RFC3339)
	writeState(t, dir, "chat", `{"version":1,"desired":99999999999,"current":-1,"state":{},"saved_at":"`+now+`"}`)
	if _, err := store.Load("chat"); err == nil || !strings.Contains(err.Error(), "desired: 99999999999: want 0..2147483647") {
		t.Errorf("Load: %v, want the desired bound named", err)
	}
	src := &fakeSource{} // every URL down: nothing known
	l, m := loopWithMax(t, src, store, "8")
	if hasDesired(m, "chat") {
		t.Error("desired exported from a refused state file")
	}
	if got := queryErrors(m, "chat", "state_read"); got != 1 {
		t.Errorf("query_errors_total{reason=state_read} = %v, want 1", got)
	}
	l.Cycle(t.Context())
	if hasDesired(m, "chat") {
		t.Error("desired exported during the outage without any decision")
	}
}

// TestRestoreClampedToMax: a real state saved at desired 4 (max 8), then a
// restart with max 2 and every URL down: the restored value exported before
// the first cycle is min(4, 2) = 2, and the held value during the outage
// stays 2 (the tester saw 4 for the whole outage).
func TestRestoreClampedToMax(t *testing.T) {
	dir := t.TempDir()
	store, err := NewStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	src := &fakeSource{}
	l1, m1 := loopWithMax(t, src, store, "8")
	// queue 80 + 16 = 96 at 1 replica, target 24: ceil(96/24) = 4, within
	// the default scale-up limit max(4 pods, 100 %) = +4 from 1 → 4 allowed.
	src.set("chat", load(1, 80, 16))
	l1.Cycle(t.Context())
	if got := desired(t, m1, "chat"); got != 4 {
		t.Fatalf("before restart: %v, want 4", got)
	}
	src2 := &fakeSource{} // outage
	l2, m2 := loopWithMax(t, src2, store, "2")
	if got := desired(t, m2, "chat"); got != 2 {
		t.Errorf("restored with max 2: %v, want 2", got)
	}
	l2.Cycle(t.Context())
	if got, r := desired(t, m2, "chat"), lastRecord(l2, "chat"); got != 2 || !r.Held {
		t.Errorf("held during the outage: %v (held %v), want 2 held", got, r.Held)
	}
}

// TestHoldClampedAfterReload: desired 2 is held during an outage; SIGHUP
// narrows max to 1: the next held value is min(2, 1) = 1.
func TestHoldClampedAfterReload(t *testing.T) {
	src := &fakeSource{}
	l, m := loopWithMax(t, src, nil, "8")
	// queue 40 + 8 = 48 at 1 replica, target 24: ceil(48/24) = 2.
	src.set("chat", load(1, 40, 8))
	l.Cycle(t.Context())
	if got := desired(t, m, "chat"); got != 2 {
		t.Fatalf("before the outage: %v, want 2", got)
	}
	src.set("chat", Reading{Obs: unknownObservation()})
	l.Cycle(t.Context())
	if got := desired(t, m, "chat"); got != 2 {
		t.Fatalf("outage: %v, want 2 held", got)
	}
	if err := l.SetConfig(context.Background(), configWithMax(t, "1")); err != nil {
		t.Fatal(err)
	}
	l.Cycle(t.Context())
	if got, r := desired(t, m, "chat"), lastRecord(l, "chat"); got != 1 || !r.Held {
		t.Errorf("after reload to max 1: %v (held %v), want 1 held", got, r.Held)
	}
}

// TestStoreRefusesNonRegular: a state file symlinked to /dev/zero is
// refused by its mode, unread (reading it would exhaust memory); a sparse
// file of MaxStateFileSize+1 bytes is refused by its size; a state that
// recommend.State.Validate refuses (replicas -5) is refused.
func TestStoreRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	store, err := NewStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat("/dev/zero"); err == nil {
		if err := os.Symlink("/dev/zero", filepath.Join(dir, "zero.json")); err != nil {
			t.Fatal(err)
		}
		if _, err := store.Load("zero"); err == nil || !strings.Contains(err.Error(), "not a regular file") {
			t.Errorf("/dev/zero: %v, want not a regular file", err)
		}
	}
	f, err := os.Create(filepath.Join(dir, "big.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxStateFileSize + 1); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if _, err := store.Load("big"); err == nil || !strings.Contains(err.Error(), "larger than the 16777216 allowed") {
		t.Errorf("big: %v", err)
	}
	now := time.Now().UTC().Format(time.RFC3339)
	writeState(t, dir, "neg", `{"version":1,"desired":1,"current":1,"state":{"recommendations":[{"at":"`+now+`","replicas":-5}]},"saved_at":"`+now+`"}`)
	if _, err := store.Load("neg"); err == nil || !strings.Contains(err.Error(), "replicas") {
		t.Errorf("negative replicas: %v", err)
	}
	writeState(t, dir, "extra", `{"version":1,"desired":1,"current":1,"state":{},"saved_at":"`+now+`","bogus":1}`)
	if _, err := store.Load("extra"); err == nil || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("unknown key: %v", err)
	}
	// A key given twice was read as its last value (desired 5 then 1
	// exported 1): refused.
	writeState(t, dir, "twice", `{"version":1,"desired":5,"desired":1,"current":1,"state":{},"saved_at":"`+now+`"}`)
	if _, err := store.Load("twice"); err == nil || !strings.Contains(err.Error(), "desired: key given twice") {
		t.Errorf("duplicate key: %v", err)
	}
	// A state Save wrote loads back equal.
	at := time.Now().UTC().Truncate(time.Second)
	st := recommend.State{LastAt: at, Recommendations: []recommend.TimedReplicas{{At: at, Replicas: 3}}}
	if err := store.Save("ok", Persisted{Desired: 3, Current: 2, State: st, SavedAt: time.Now()}); err != nil {
		t.Fatal(err)
	}
	p, err := store.Load("ok")
	if err != nil || p == nil || p.Desired != 3 || p.Current != 2 || len(p.State.Recommendations) != 1 {
		b, _ := json.Marshal(p)
		t.Errorf("round trip: %s, %v", b, err)
	}
}

// TestHoldRaisedBySchedule: a value held through an outage respects the
// schedule floor, not only min. Schedule "0 8 * * 1-5" for 12h with min 4
// (UTC). Monday 2026-11-30 07:59:00: the window is closed; queue 40 + 8 =
// 48 at 1 replica, target 24: ceil(48/24) = 2. At 08:00:15 the window is
// open (fired 08:00, until 20:00) and no signal is known: the held 2 is
// raised to the floor 4.
func TestHoldRaisedBySchedule(t *testing.T) {
	text := strings.ReplaceAll(loopConfig, "  max: 8\n- name: other", "  max: 8\n  schedule: [{cron: \"0 8 * * 1-5\", duration: 12h, min: 4, timezone: UTC}]\n- name: other")
	cfg, err := config.Parse([]byte(text), "loop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := &fakeSource{}
	now := time.Date(2026, 11, 30, 7, 59, 0, 0, time.UTC)
	m := NewMetrics(prometheus.NewRegistry(), "test")
	l := newLoop(t, LoopOptions{Source: src, Metrics: m, Interval: 15 * time.Second, Now: func() time.Time { return now }})
	if err := l.SetConfig(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	src.set("chat", load(1, 40, 8))
	l.Cycle(t.Context())
	if got := desired(t, m, "chat"); got != 2 {
		t.Fatalf("before the window: %v, want 2", got)
	}
	now = time.Date(2026, 11, 30, 8, 0, 15, 0, time.UTC)
	src.set("chat", Reading{Obs: unknownObservation()})
	l.Cycle(t.Context())
	if got, r := desired(t, m, "chat"), lastRecord(l, "chat"); got != 4 || !r.Held {
		t.Errorf("outage inside the window: %v (held %v), want 4 held", got, r.Held)
	}
}
