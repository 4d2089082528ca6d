package scrape

import (
	"fmt"
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
