package scrape

import (
	"path/filepath"
	"testing"

	"github.com/infscale/infscale/pkg/modelserver"
)

// fixtureWants are the project's own small pages in testdata/, written by
// hand in each server's format (names and labels as its exporter writes
// them, values chosen for the test); the expectations are worked out by hand
// from the values. Each page stands for one kind of fault a reader must not
// make.
var fixtureWants = map[string]struct {
	want  pageWant
	check func(t *testing.T, p *Page)
}{
	// Rename across versions: current trtllm-serve names its families
	// `trtllm_` (the 2025 pre-release `pytrtllm:`); a reader that knows only
	// the old prefix finds no server. running 6, waiting 3, kv 0.375; the
	// success counter is summed over finished_reason (40 + 2 = 42); the
	// _created gauge is not a counter; max_num_active_requests 64 is
	// capacity, not load; the queue-time histogram counts 42 requests,
	// 2.25 s in all.
	"trtllm-serve.prom": {
		want: pageWant{server: modelserver.TRTLLM, running: 6, waiting: 3, kv: 0.375, cpu: A, prompt: 8400, gen: 2100, success: 42, engines: 1},
		check: func(t *testing.T, p *Page) {
			wantModels(t, p, "org/model-a")
			checkFloat(t, "max running (capacity)", p.MaxRunning, 64)
			checkFloat(t, "prefix hits", p.PrefixHits, 2048)
			checkFloat(t, "prefix queries", p.PrefixQueries, 8400)
			if p.TTFT == nil || p.TTFT.Count != 42 || p.TTFT.Sum != 6.5 || len(p.TTFT.Buckets) != 3 {
				t.Errorf("TTFT = %+v, want count 42, sum 6.5, 3 buckets", p.TTFT)
			}
			if q := p.QueueTime; q == nil || q.Family != "trtllm_request_queue_time_seconds" || q.Count != 42 || q.Sum != 2.25 {
				t.Errorf("queue time = %+v, want trtllm_request_queue_time_seconds with count 42, sum 2.25", q)
			}
		},
	},
	// Rename across versions, once more: Dynamo's worker re-exported
	// TensorRT-LLM's request families under `trtllm:`; success 7 + 1 = 8,
	// TTFT 8 requests; no running, waiting or KV family: all three ABSENT,
	// never 0.
	"trtllm-dynamo-colon.prom": {
		want: pageWant{server: modelserver.TRTLLM, running: A, waiting: A, kv: A, cpu: A, prompt: A, gen: A, success: 8, engines: 0},
		check: func(t *testing.T, p *Page) {
			if p.TTFT == nil || p.TTFT.Family != "trtllm:time_to_first_token_seconds" || p.TTFT.Count != 8 {
				t.Errorf("TTFT = %+v, want trtllm:time_to_first_token_seconds with count 8", p.TTFT)
			}
		},
	},
	// Counters without _total (TGI's router, Rust metrics exporter): the
	// success counter is tgi_request_success, 12; running 5 (batch), waiting
	// 3 (queue); no KV gauge. The queue-time histogram is
	// tgi_request_queue_duration (12 requests, 1.5 s in all); the mean time
	// per token is one mean per request, not an inter-token latency: ITL
	// stays absent.
	"tgi-router.prom": {
		want: pageWant{server: modelserver.TGI, running: 5, waiting: 3, kv: A, cpu: A, prompt: A, gen: A, success: 12, engines: 1},
		check: func(t *testing.T, p *Page) {
			if q := p.QueueTime; q == nil || q.Family != "tgi_request_queue_duration" || q.Count != 12 || q.Sum != 1.5 || len(q.Buckets) != 3 {
				t.Errorf("queue time = %+v, want tgi_request_queue_duration with count 12, sum 1.5, 3 buckets", q)
			}
			if p.ITL != nil {
				t.Errorf("ITL = %+v, want none (a per-request mean is not an inter-token latency)", p.ITL)
			}
		},
	},
	// One family carrying several signals told apart by a label (Triton's
	// TensorRT-LLM backend): running is request_type="active" summed over
	// the models, 3 + 4 = 7 (not the family's sum 651); waiting "waiting"
	// 2 + 0 = 2, read before Triton's pending count (5 + 0); KV the max of
	// kv_cache_block_type="fraction", 0.75 (the "used" block counts are not a
	// fraction); capacity "max" 256 + 128 = 384; success 9 + 11 = 20.
	"triton-tensorrtllm-backend.prom": {
		want: pageWant{server: modelserver.Triton, running: 7, waiting: 2, kv: 0.75, cpu: A, prompt: A, gen: A, success: 20, engines: 1},
		check: func(t *testing.T, p *Page) {
			wantModels(t, p, "llm_a", "llm_b")
			checkFloat(t, "max running (capacity)", p.MaxRunning, 384)
			if want := `nv_trt_llm_request_metrics{request_type="active"}`; p.Chosen.Running != want {
				t.Errorf("running read from %q, want %q", p.Chosen.Running, want)
			}
		},
	},
	// The backend's page alone (no nv_inference_ family) is still Triton's;
	// active 0 is a running count of 0, not absent; no "fraction" series:
	// KV ABSENT, never a block count.
	"triton-tensorrtllm-backend-only.prom": {
		want:  pageWant{server: modelserver.Triton, running: 0, waiting: 7, kv: A, cpu: A, prompt: A, gen: A, success: A, engines: 1},
		check: func(t *testing.T, p *Page) { checkFloat(t, "max running (capacity)", p.MaxRunning, 64) },
	},
}

// TestFixturePages reads each fixture with auto-detection and with its
// server given, and checks the hand-worked values.
func TestFixturePages(t *testing.T) {
	for name, fw := range fixtureWants {
		for _, server := range []modelserver.Server{modelserver.Unknown, fw.want.server} {
			t.Run(name+"/"+server.String(), func(t *testing.T) {
				p, err := readFile(t, filepath.Join("testdata", name), server)
				if err != nil {
					t.Fatalf("Read: %v", err)
				}
				w := fw.want
				w.check = fw.check
				checkPage(t, p, w)
			})
		}
	}
}
