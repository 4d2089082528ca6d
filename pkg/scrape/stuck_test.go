package scrape

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/modelserver"
)

// TestStuckFlatCounters is the llm-scaler #391 shape: Running 1, Waiting 14
// and token counters that do not move. Scrape 1 has no baseline (not
// suspect: the page alone looks busy), scrape 2 is flat (streak 1), scrape 3
// flat again (streak 2: stuck). Tokens moving resets the streak; so does a
// restart (process_start_time_seconds changed).
func TestStuckFlatCounters(t *testing.T) {
	page := func(prompt, gen, start string) *Page {
		text := fmt.Sprintf(`# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 1
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{model_name="m"} 14
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{model_name="m"} 0.1
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{model_name="m"} %s
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{model_name="m"} %s
# TYPE process_start_time_seconds gauge
process_start_time_seconds %s
`, prompt, gen, start)
		return readString(t, text, modelserver.VLLM)
	}
	// Scrapes every 5 s: how long it has looked stuck counts from the scrape
	// before the first flat interval (5 s at the first flat scrape).
	var tr StuckTracker
	for i, tc := range []struct {
		prompt, gen, start string
		want               int
		wantFor            time.Duration
	}{
		{"100", "500", "1", 0, 0},
		{"100", "500", "1", 1, 5 * time.Second},
		{"100", "500", "1", 2, 10 * time.Second},
		{"100", "501", "1", 0, 0}, // a token generated
		{"100", "501", "1", 1, 5 * time.Second},
		{"100", "501", "2", 0, 0}, // restarted (and counters equal by chance)
	} {
		tr.Begin()
		got, gotFor := tr.Observe("u", page(tc.prompt, tc.gen, tc.start), t0.Add(time.Duration(i)*5*time.Second))
		tr.End()
		if got != tc.want || gotFor != tc.wantFor {
			t.Errorf("scrape %d: streak %d for %v, want %d for %v", i+1, got, gotFor, tc.want, tc.wantFor)
		}
	}
}

// TestSuspectOneEngineOfSeveral: the page rule on each engine of a
// data-parallel vLLM page (cases C18 and C06 together). Engine 1 waits 6
// with nothing running and an empty KV cache while engine 0 runs 7 (KV
// 0.5): the page's sums (running 7, waiting 2 + 6 = 8, KV 0.5) hid it and
// its queue counted as load for as long as it never drained. Values are
// kept as read; an idle engine (waiting 0) or one without a KV series is
// not suspect.
func TestSuspectOneEngineOfSeveral(t *testing.T) {
	const stuck = `vllm:num_requests_running{engine="0",model_name="m"} 7
vllm:num_requests_running{engine="1",model_name="m"} 0
vllm:num_requests_waiting{engine="0",model_name="m"} 2
vllm:num_requests_waiting{engine="1",model_name="m"} 6
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.5
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0
`
	p := readString(t, stuck, modelserver.Unknown)
	checkFloat(t, "running", p.Running, 7)
	checkFloat(t, "waiting", p.Waiting, 8)
	checkFloat(t, "kv", p.KV, 0.5)
	want := `stuck engine? engine {engine="1"}: waiting 6 with running 0 and KV usage 0 while the page's other engines run 7`
	if !strings.HasPrefix(p.Suspect, want) {
		t.Errorf("suspect %q, want it to start %q", p.Suspect, want)
	}
	for name, page := range map[string]string{
		"idle engine":       strings.Replace(stuck, `waiting{engine="1",model_name="m"} 6`, `waiting{engine="1",model_name="m"} 0`, 1),
		"engine without KV": strings.Replace(stuck, "vllm:kv_cache_usage_perc{engine=\"1\",model_name=\"m\"} 0\n", "", 1),
	} {
		if p := readString(t, page, modelserver.Unknown); p.Suspect != "" {
			t.Errorf("%s: suspect %q, want none", name, p.Suspect)
		}
	}
}
