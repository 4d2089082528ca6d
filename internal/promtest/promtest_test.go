package promtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// The tools module must build the Prometheus the main module imports: one
// version of PromQL semantics in the library and the server under test.
func TestToolsPinMatchesMainModule(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	re := regexp.MustCompile(`(?m)^\s*github\.com/prometheus/prometheus (v\S+)`)
	version := func(path string) string {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		m := re.FindSubmatch(b)
		if m == nil {
			t.Fatalf("%s: no github.com/prometheus/prometheus requirement", path)
		}
		return string(m[1])
	}
	main, tools := version(filepath.Join(root, "go.mod")), version(filepath.Join(root, "tools", "go.mod"))
	if main != tools {
		t.Fatalf("go.mod has prometheus %s, tools/go.mod %s: bump both together", main, tools)
	}
}

// Backfill two hours of a gauge 2 h in the past (timestamps in seconds,
// "# EOF" last), start Prometheus on the blocks, and read them back with a
// range query. By hand: samples every 60 s with value = minutes since the
// first sample, so at the first + 30 min the value is 30, and a 10-minute
// step from the first sample gives 13 points over 2 h (0, 10, ..., 120).
func TestBackfillThenRangeQuery(t *testing.T) {
	first := time.Now().Add(-3 * time.Hour).Truncate(time.Hour)
	var b strings.Builder
	b.WriteString("# TYPE vllm:num_requests_running gauge\n")
	for m := 0; m <= 120; m++ {
		fmt.Fprintf(&b, "vllm:num_requests_running{pod=\"chat-1\"} %d %d\n", m, first.Add(time.Duration(m)*time.Minute).Unix())
	}
	b.WriteString("# EOF\n")
	data := Backfill(t, b.String())
	s := Start(t, Options{DataDir: data, Flags: []string{"--storage.tsdb.retention.time=30d"}})
	api := s.API(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	v, _, _, err := api.Query(ctx, `vllm:num_requests_running`, first.Add(30*time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if vec := v.(model.Vector); len(vec) != 1 || vec[0].Value != 30 {
		t.Fatalf("instant at +30m: %v, want 30", v)
	}
	r, _, _, err := api.QueryRange(ctx, `vllm:num_requests_running`, v1.Range{Start: first, End: first.Add(2 * time.Hour), Step: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	m := r.(model.Matrix)
	if len(m) != 1 || len(m[0].Values) != 13 || m[0].Values[12].Value != 120 {
		t.Fatalf("range: %v, want 13 points ending at 120", r)
	}
}

// An empty Prometheus starts, is ready, answers, and stops.
func TestStartStop(t *testing.T) {
	s := Start(t, Options{})
	v := s.WaitFor(t, `vector(1)`, 10*time.Second, func(v model.Vector) bool { return len(v) == 1 })
	if v[0].Value != 1 {
		t.Fatalf("vector(1) = %v", v)
	}
	s.Stop()
	s.Stop() // idempotent
	if _, err := os.Stat(s.DataDir); err != nil {
		t.Fatalf("data dir: %v", err)
	}
}
