package tune

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"
	"time"
)

// topKeys is the top-level keys of v's JSON object, in the order written.
func topKeys(t *testing.T, v any) []string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	d := json.NewDecoder(bytes.NewReader(b))
	if tok, err := d.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("%s: want a JSON object (%v)", b, err)
	}
	var keys []string
	for d.More() {
		k, err := d.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, k.(string))
		var skip json.RawMessage
		if err := d.Decode(&skip); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// TestJSONKeys pins the keys (and their order) of the JSON that tune
// --json prints (Report) and that tune --shard writes and serve reads
// back (TargetResult): the two share their winner's fields, and the files
// they write must not change with that.
func TestJSONKeys(t *testing.T) {
	f := Figures{Requests: 10, Misses: 1, MissPct: 10, ReplicaMinutes: 2, Peak: 3}
	o := Outcome{Holds: true, MaxMissPct: 0.1, InSample: f, OutOfSample: f, Stress: []Figures{f}, StressNames: []string{"x2"}}
	rep := Report{Policy: "queue:8", Outcome: o, Split: 60, Duration: 80, Screened: "all",
		Finalists: []Row{{Policy: "queue:8"}}, Frontier: []Row{{Policy: "queue:8"}}, Rows: []Row{{Policy: "queue:8"}},
		Target: "prometheus: {}\n", Baselines: []Baseline{{Policy: "queue:24"}}, Replays: 4}
	want := []string{"policy", "holds", "max_miss_pct", "in_sample", "out_of_sample", "stress", "stress_names",
		"split_s", "duration_s", "screened_on", "finalists", "frontier", "serve_target", "baselines", "replays"}
	if got := topKeys(t, rep); !slices.Equal(got, want) {
		t.Errorf("Report's JSON keys:\n got %q\nwant %q", got, want)
	}
	tr := TargetResult{Target: "chat", At: time.Unix(0, 0).UTC(), History: 3600, SLOTTFT: 2, Period: 15,
		Replica: &ReplicaRef{GPU: "h100-sxm", Model: "llama-3-8b", TP: 1}, Policy: "queue:8",
		Candidate: Candidate{Metric: "queue", Target: 8}, Outcome: o, Replays: 4, CPUSeconds: 1.5}
	want = []string{"target", "at", "history_s", "slo_ttft_s", "period_s", "replica", "policy", "candidate", "holds", "max_miss_pct", "in_sample",
		"out_of_sample", "stress", "stress_names", "replays", "cpu_seconds"}
	if got := topKeys(t, tr); !slices.Equal(got, want) {
		t.Errorf("TargetResult's JSON keys:\n got %q\nwant %q", got, want)
	}
	// The winner's figures keep their keys too.
	want = []string{"requests", "slo_misses", "miss_pct", "replica_minutes", "peak"}
	if got := topKeys(t, f); !slices.Equal(got, want) {
		t.Errorf("Figures' JSON keys:\n got %q\nwant %q", got, want)
	}
}
