package promtest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
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

// The Makefile's tools target builds with BuildTags, and under them the
// pinned Prometheus server links no service discovery but static, file and
// http: no discovery/kubernetes or discovery/aws, nor the Kubernetes API
// types (Prometheus's plugins/*.go are `//go:build !remove_all_sd ||
// enable_<name>_sd`, since 3.10). promtool imports discovery/kubernetes
// itself, so the tag trims it less.
func TestToolsBuildWithoutServiceDiscovery(t *testing.T) {
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	mk, err := os.ReadFile(filepath.Join(root, "Makefile"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^PROMETHEUS_TAGS \?= ` + regexp.QuoteMeta(BuildTags) + `$`).Match(mk) {
		t.Errorf("Makefile: want PROMETHEUS_TAGS ?= %s (the tags internal/promtest builds with)", BuildTags)
	}
	if n := strings.Count(string(mk), "build -C tools -tags $(PROMETHEUS_TAGS) "); n != 2 {
		t.Errorf("Makefile: %d go build -C tools lines with -tags $(PROMETHEUS_TAGS), want 2 (prometheus, promtool)", n)
	}
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("go command not found: %v", err)
	}
	cmd := exec.Command(goBin, "list", "-C", filepath.Join(root, "tools"), "-tags", BuildTags, "-deps",
		"github.com/prometheus/prometheus/cmd/prometheus")
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("%s: %v\n%s", cmd, err, stderr)
	}
	deps := strings.Fields(string(out))
	for _, want := range []string{"github.com/prometheus/prometheus/discovery/file", "github.com/prometheus/prometheus/discovery/http"} {
		if !slices.Contains(deps, want) {
			t.Errorf("-tags %s: %s missing", BuildTags, want)
		}
	}
	for _, p := range deps {
		if strings.HasPrefix(p, "github.com/prometheus/prometheus/discovery/kubernetes") ||
			strings.HasPrefix(p, "github.com/prometheus/prometheus/discovery/aws") ||
			strings.HasPrefix(p, "k8s.io/api/") {
			t.Errorf("-tags %s still links %s", BuildTags, p)
		}
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
