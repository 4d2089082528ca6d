package scrape

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/modelserver"
)

// The prefix-cache counters of the shared pages, read by hand from the
// files: page 03 (vLLM 0.10 excerpt) has hits only under the deprecated
// vllm:gpu_prefix_cache_hits_total (0) and queries under
// vllm:prefix_cache_queries_total (32); page 18 (llm-d-inference-sim) has
// vllm:prefix_cache_hits without _total (8) and no queries; page 06
// (SGLang 0.4.9) sglang:cached_tokens_total 2688 and no prompt counter;
// pages 16 and 08 (SGLang) only the cache_hit_rate gauge (87.6 and 0),
// which is not read: both absent.
func TestPrefixCountersOnSharedPages(t *testing.T) {
	dir := sharedDir(t, "metrics")
	for _, c := range []struct {
		file                 string
		server               modelserver.Server
		hits, queries        float64
		hitFamily, qryFamily string
	}{
		{"03-vllm-0.10.0-created-series-engine-label.prom", modelserver.VLLM, 0, 32, "vllm:gpu_prefix_cache_hits_total", "vllm:prefix_cache_queries_total"},
		{"18-llm-d-inference-sim-counter-without-total.prom", modelserver.VLLM, 8, A, "vllm:prefix_cache_hits", ""},
		{"06-sglang-0.4.9-engine_type-label-mismatch.prom", modelserver.SGLang, 2688, A, "sglang:cached_tokens_total", ""},
		{"16-sglang-wip-2024-09-old-names-name-label.prom", modelserver.SGLang, A, A, "", ""},
		{"08-sglang-via-smg-gateway-underscore-names.prom", modelserver.SGLang, A, A, "", ""},
	} {
		p, err := readFile(t, filepath.Join(dir, c.file), c.server)
		if err != nil {
			t.Fatalf("%s: %v", c.file, err)
		}
		checkFloat(t, c.file+" prefix hits", p.PrefixHits, c.hits)
		checkFloat(t, c.file+" prefix queries", p.PrefixQueries, c.queries)
		if p.Chosen.PrefixHits != c.hitFamily || p.Chosen.PrefixQueries != c.qryFamily {
			t.Errorf("%s: chosen %q / %q, want %q / %q", c.file, p.Chosen.PrefixHits, p.Chosen.PrefixQueries, c.hitFamily, c.qryFamily)
		}
		// One page has no rate: the fraction needs a baseline.
		if r := Rate(nil, p); !same(r.PrefixHits, A) || !same(r.PrefixQueries, A) {
			t.Errorf("%s without a baseline: rates %v / %v, want absent", c.file, r.PrefixHits, r.PrefixQueries)
		}
	}
}

// Page 03 as the baseline and the same replica 15 s later with 30 more
// hits and 40 more queries (hand-built, the page's own families): 2 and
// 2.667 tokens/s, a fraction of 30/40 = 0.75. Page 18 against itself 15 s
// later with 8 more hits: no queries counter, so neither rate (a hit rate
// pairs with nothing).
func TestPrefixRates(t *testing.T) {
	dir := sharedDir(t, "metrics")
	t0 := time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC)
	prev, err := readFile(t, filepath.Join(dir, "03-vllm-0.10.0-created-series-engine-label.prom"), modelserver.VLLM)
	if err != nil {
		t.Fatal(err)
	}
	prev.Source, prev.Time = "r0", t0
	cur := readString(t, `# TYPE vllm:gpu_prefix_cache_hits_total counter
vllm:gpu_prefix_cache_hits_total{engine="0",model_name="zai-org/GLM-4.5"} 30
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="zai-org/GLM-4.5"} 72
`, modelserver.VLLM)
	cur.Source, cur.Time = "r0", t0.Add(15*time.Second)
	r := Rate(prev, cur)
	checkFloat(t, "hits/s", r.PrefixHits, 2)
	checkFloat(t, "queries/s", r.PrefixQueries, 40.0/15)
	if got := r.PrefixHits / r.PrefixQueries; !same(got, 0.75) {
		t.Errorf("fraction %v, want 0.75", got)
	}

	p18, err := readFile(t, filepath.Join(dir, "18-llm-d-inference-sim-counter-without-total.prom"), modelserver.VLLM)
	if err != nil {
		t.Fatal(err)
	}
	p18.Source, p18.Time = "sim", t0
	later := readString(t, strings.Replace(`# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="kthena-mock-test"} 0
# TYPE vllm:prefix_cache_hits counter
vllm:prefix_cache_hits{model_name="kthena-mock-test"} N
`, "N", "16", 1), modelserver.VLLM)
	later.Source, later.Time = "sim", t0.Add(15*time.Second)
	if r := Rate(p18, later); !same(r.PrefixHits, A) || !same(r.PrefixQueries, A) {
		t.Errorf("page 18: rates %v / %v, want absent (no queries counter)", r.PrefixHits, r.PrefixQueries)
	}
}
