package serve

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/infscale/infscale/internal/atomicfile"
	"github.com/infscale/infscale/pkg/tune"
)

// TestTuningStateWrittenDurably: tune/NAME.json is written with the data
// and the rename synced (atomicfile.WriteDurable), in a tune/ created with
// the state dir synced after (atomicfile.MkdirDurable): after a crash a
// plain atomic write may leave it empty, an unsynced tune/ lose it with
// the directory, and the next start would forget the target's adoption
// and revert. An adoption writes it through those two.
func TestTuningStateWrittenDurably(t *testing.T) {
	if reflect.ValueOf(writeTuneState).Pointer() != reflect.ValueOf(atomicfile.WriteDurable).Pointer() {
		t.Fatal("the tuning state is not written with atomicfile.WriteDurable")
	}
	if reflect.ValueOf(mkdirTuneState).Pointer() != reflect.ValueOf(atomicfile.MkdirDurable).Pointer() {
		t.Fatal("tune/ is not created with atomicfile.MkdirDurable (its parent synced)")
	}
	var wrote, made []string
	old, oldMkdir := writeTuneState, mkdirTuneState
	t.Cleanup(func() { writeTuneState, mkdirTuneState = old, oldMkdir })
	writeTuneState = func(path string, data []byte) error {
		wrote = append(wrote, path)
		return old(path, data)
	}
	mkdirTuneState = func(dir string) error {
		made = append(made, dir)
		return oldMkdir(dir)
	}
	results, state := t.TempDir(), t.TempDir()
	now := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	src := &fakeSource{}
	src.set("chat", load(2, 40, 0))
	reg := prometheus.NewRegistry()
	l := newLoop(t, LoopOptions{Source: src, Metrics: NewMetrics(reg, "test"), Interval: 15 * time.Second, Now: func() time.Time { return now }})
	tn := NewTuning(reg)
	tn.Now, tn.StateDir = func() time.Time { return now }, state
	l.SetTuning(tn)
	ctx := context.Background()
	if err := l.SetConfig(ctx, tuneTarget(t, fmt.Sprintf("{every: 1h, dir: %q, mode: adopt}", results))); err != nil {
		t.Fatal(err)
	}
	c := tune.Candidate{Metric: "queue", Target: 8}
	if err := tune.WriteResult(results, tune.TargetResult{Target: "chat", At: now, SLOTTFT: 2, Period: 15, Policy: c.Policy(), Candidate: c,
		Outcome: tune.Outcome{Holds: true, MaxMissPct: 0.1}}); err != nil {
		t.Fatal(err)
	}
	tn.Step(ctx)
	if want := filepath.Join(state, "tune", "chat.json"); !slices.Contains(wrote, want) {
		t.Errorf("writes %v, want %s among them", wrote, want)
	}
	if want := filepath.Join(state, "tune"); !slices.Contains(made, want) {
		t.Errorf("directories made %v, want %s among them", made, want)
	}
}

// TestTuningStateRemovedDurably: tune/NAME.json is removed with its
// directory synced after (atomicfile.RemoveDurable): an unsynced removal
// can come back after a crash, and the next start would restore the
// adoption of a target whose tune: block was taken out. Removing the
// block removes the file through that removal.
func TestTuningStateRemovedDurably(t *testing.T) {
	if reflect.ValueOf(removeTuneState).Pointer() != reflect.ValueOf(atomicfile.RemoveDurable).Pointer() {
		t.Fatal("the tuning state is not removed with atomicfile.RemoveDurable")
	}
	var removed []string
	old := removeTuneState
	t.Cleanup(func() { removeTuneState = old })
	removeTuneState = func(path string) error {
		removed = append(removed, path)
		return old(path)
	}
	results, state := t.TempDir(), t.TempDir()
	now := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	src := &fakeSource{}
	src.set("chat", load(2, 40, 0))
	reg := prometheus.NewRegistry()
	l := newLoop(t, LoopOptions{Source: src, Metrics: NewMetrics(reg, "test"), Interval: 15 * time.Second, Now: func() time.Time { return now }})
	tn := NewTuning(reg)
	tn.Now, tn.StateDir = func() time.Time { return now }, state
	l.SetTuning(tn)
	ctx := context.Background()
	with := tuneTarget(t, fmt.Sprintf("{every: 1h, dir: %q, mode: adopt}", results))
	if err := l.SetConfig(ctx, with); err != nil {
		t.Fatal(err)
	}
	c := tune.Candidate{Metric: "queue", Target: 8}
	if err := tune.WriteResult(results, tune.TargetResult{Target: "chat", At: now, SLOTTFT: 2, Period: 15, Policy: c.Policy(), Candidate: c,
		Outcome: tune.Outcome{Holds: true, MaxMissPct: 0.1}}); err != nil {
		t.Fatal(err)
	}
	tn.Step(ctx)
	path := filepath.Join(state, "tune", "chat.json")
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("adopted: state file %v", err)
	}
	without := tuneTarget(t, fmt.Sprintf("{every: 1h, dir: %q, mode: adopt}", results))
	without.Targets[0].Tune = nil
	if err := l.SetConfig(ctx, without); err != nil {
		t.Fatal(err)
	}
	tn.Step(ctx)
	if !slices.Equal(removed, []string{path}) {
		t.Errorf("removals %v, want [%s]", removed, path)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("block removed: state file %v, want it removed", err)
	}
}

// TestStateDirCreatedDurably: a --state-dir NewStore creates is made with
// the parent of each new directory synced after (atomicfile.MkdirDurable),
// as tune/ is: the durable tune/NAME.json writes sync tune/ and the state
// dir, not the entry naming a state dir this start created, so a node
// crash could take the first files away with it. A state dir two levels
// below an existing one, base/a/b, goes through it once, as given; an
// existing one through it again, creating nothing.
func TestStateDirCreatedDurably(t *testing.T) {
	if reflect.ValueOf(mkdirStateDir).Pointer() != reflect.ValueOf(atomicfile.MkdirDurable).Pointer() {
		t.Fatal("the state dir is not created with atomicfile.MkdirDurable (its parent synced)")
	}
	var made []string
	old := mkdirStateDir
	t.Cleanup(func() { mkdirStateDir = old })
	mkdirStateDir = func(dir string) error {
		made = append(made, dir)
		return old(dir)
	}
	dir := filepath.Join(t.TempDir(), "a", "b")
	if _, err := NewStore(dir); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() {
		t.Fatalf("state dir after NewStore: %v", err)
	}
	if _, err := NewStore(dir); err != nil {
		t.Fatalf("existing: %v", err)
	}
	if want := []string{dir, dir}; !slices.Equal(made, want) {
		t.Errorf("directories made %v, want %v", made, want)
	}
}
