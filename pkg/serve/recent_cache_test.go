package serve

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/config"
)

// TestRecentJSONOncePerChange: /debug/decisions' answer is made once per
// change of what it shows, so a flood of reads does not take the loop's
// lock (each Recent explains every target again under it: 55 ms at
// 10,000 targets, BenchmarkRecent10000Targets) once per read. Between
// cycles every read is the same bytes, equal to Recent's; a cycle, a
// reload and a finished restore each give a fresh answer.
func TestRecentJSONOncePerChange(t *testing.T) {
	src := &fakeSource{}
	src.set("chat", load(1, 30, 10)) // (30 + 10) / 24: 2 replicas
	l, _ := newTestLoop(t, src, nil)
	now := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	l.now = func() time.Time { return now }
	same := func(when string) []byte {
		t.Helper()
		b := l.RecentJSON()
		want, err := json.MarshalIndent(l.Recent(), "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != string(want)+"\n" {
			t.Fatalf("%s: /debug/decisions\n%s\nwant Recent's\n%s", when, b, want)
		}
		return b
	}
	before := same("before any cycle") // {"chat": [], "other": []}
	l.Cycle(context.Background())
	first := same("after the first cycle")
	if string(first) == string(before) {
		t.Fatal("the first cycle's decision is not shown")
	}
	var wg sync.WaitGroup
	for range 50 { // a flood: one answer, shared
		wg.Go(func() {
			if b := l.RecentJSON(); &b[0] != &first[0] {
				t.Error("a read between cycles made a new answer")
			}
		})
	}
	wg.Wait()
	now = now.Add(15 * time.Second)
	src.set("chat", load(2, 60, 12)) // 72 / 24: 3
	l.Cycle(context.Background())
	if second := same("after the second cycle"); string(second) == string(first) {
		t.Fatal("the second cycle's decision is not shown")
	}
	cfg, err := config.Parse([]byte(loopConfig[:len(loopConfig)-len("- name: other\n  scrape: [http://127.0.0.1:2/metrics]\n  metrics: [{type: queue, target: 10}]\n  max: 8\n")]), "loop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.SetConfig(context.Background(), cfg); err != nil { // "other" removed
		t.Fatal(err)
	}
	var after map[string]json.RawMessage
	if err := json.Unmarshal(same("after a reload"), &after); err != nil {
		t.Fatal(err)
	}
	if _, ok := after["other"]; ok || len(after) != 1 {
		t.Errorf("after the reload removed other: targets %v, want chat alone", keys(after))
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
