package scrape

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/infscale/infscale/pkg/modelserver"
)

// TestReadHeld: the held gauge summed over its series; a page without it,
// with NaN, ±Inf or a negative count, or declaring it another type than a
// gauge, is an error and held is NaN (unknown, never a number to decide
// on). An undeclared family (a page without # TYPE) is read.
func TestReadHeld(t *testing.T) {
	for _, tc := range []struct {
		page, err   string
		held, ready float64
	}{
		{"infscale_activator_held_requests{route=\"a\"} 3\ninfscale_activator_held_requests{route=\"b\"} 2\ninfscale_activator_upstream_ready 1\n", "", 5, 1},
		{"# TYPE infscale_activator_held_requests gauge\ninfscale_activator_held_requests 4\n", "", 4, math.NaN()},
		{"other 1\n", "no infscale_activator_held_requests", 0, 0},
		{"infscale_activator_held_requests NaN\n", "is NaN: not a count", 0, 0},
		{"infscale_activator_held_requests +Inf\n", "is +Inf: not a count", 0, 0},
		{"infscale_activator_held_requests -4\n", "is -4: not a count", 0, 0},
		// A billion held is the most; past it the exporter is broken.
		{"infscale_activator_held_requests 1e9\n", "", 1e9, math.NaN()},
		{"infscale_activator_held_requests 1e300\n", "is 1e+300: not a count of requests (allowed: 0 to 1e+09)", 0, 0},
		{"# TYPE infscale_activator_held_requests counter\ninfscale_activator_held_requests 5\n", "declared a counter, infscale reads it as a gauge", 0, 0},
		{"# TYPE infscale_activator_held_requests summary\ninfscale_activator_held_requests_sum 5\ninfscale_activator_held_requests_count 1\n", "declared a summary", 0, 0},
		// Readiness that is not 1 or 0 is unknown (-1 read as not ready:
		// serve took zero replicas as known); held is still read.
		{"infscale_activator_held_requests 2\ninfscale_activator_upstream_ready -1\n", "", 2, math.NaN()},
		{"infscale_activator_held_requests 2\ninfscale_activator_upstream_ready 7\n", "", 2, math.NaN()},
		{"infscale_activator_held_requests 2\ninfscale_activator_upstream_ready 0\n", "", 2, 0},
		// An EPP's ready endpoints -2: unknown readiness, not "none ready".
		{"llm_d_epp_flow_control_queue_size 3\nllm_d_epp_ready_endpoints{name=\"p\"} -2\n", "", 3, math.NaN()},
		{"llm_d_epp_flow_control_queue_size 3\nllm_d_epp_ready_endpoints{name=\"p\"} 0\n", "", 3, 0},
		// An EPP's flows of two pools (zero.held_scrape on a page
		// aggregating two EPPs): 3 + 2 held were read as this pool's 5.
		{"llm_d_epp_flow_control_queue_size{inference_pool=\"p\"} 3\nllm_d_epp_flow_control_queue_size{inference_pool=\"q\"} 2\nllm_d_epp_ready_endpoints{name=\"p\"} 0\n", "name two InferencePools (\"p\" and \"q\"): an Endpoint Picker serves one pool; give zero.held_scrape the /metrics of this target's pool's own EPP (its pods' port 9090)", 0, 0},
		// Two series of one pool gauge: the same, for zero.held_scrape
		// (it said "give ... as its own target", of a held_scrape URL).
		{"llm_d_epp_flow_control_queue_size 3\nllm_d_epp_ready_endpoints{name=\"p\"} 0\nllm_d_epp_ready_endpoints{name=\"p\",x=\"1\"} 0\n", "has two series ({__name__=\"llm_d_epp_ready_endpoints\", name=\"p\"} and {__name__=\"llm_d_epp_ready_endpoints\", name=\"p\", x=\"1\"}): the router writes one per pool (label name), so which is the pool's is unknown (an extra label: a newer or patched router, or an exporter relabelling its page); give zero.held_scrape the /metrics of this target's pool's own EPP (its pods' port 9090)", 0, 0},
		// Readiness declared a counter is unknown; held is still read.
		{"infscale_activator_held_requests 1\n# TYPE infscale_activator_upstream_ready counter\ninfscale_activator_upstream_ready 1\n", "", 1, math.NaN()},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, tc.page) }))
		h, err := ReadHeld(context.Background(), srv.Client(), srv.URL)
		srv.Close()
		switch {
		case tc.err == "" && (err != nil || h.Held != tc.held || !(h.Ready == tc.ready || math.IsNaN(h.Ready) && math.IsNaN(tc.ready))):
			t.Errorf("%q: %+v, %v; want held %v ready %v", tc.page, h, err, tc.held, tc.ready)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err) || !math.IsNaN(h.Held)):
			t.Errorf("%q: %+v, %v; want held NaN and an error with %q", tc.page, h, err, tc.err)
		}
		if strings.Contains(tc.err, "declared") && !errors.Is(err, ErrWrongType) {
			t.Errorf("%q: %v is not ErrWrongType", tc.page, err)
		}
	}
}

// The kind, not the one family: every family a profile reads is unknown
// when the page declares it another type. vLLM's running gauge declared a
// counter is unknown (not its value 3, the page's claim being wrong about
// what 3 is), its TTFT histogram declared a summary is absent, its
// prompt-token counter declared a gauge is absent; each is listed.
func TestWrongTypeUnknown(t *testing.T) {
	page := `# TYPE vllm:num_requests_running counter
vllm:num_requests_running 3
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting 1
# TYPE vllm:prompt_tokens_total gauge
vllm:prompt_tokens_total 100
# TYPE vllm:time_to_first_token_seconds summary
vllm:time_to_first_token_seconds{quantile="0.5"} 0.1
vllm:time_to_first_token_seconds_sum 1
vllm:time_to_first_token_seconds_count 10
`
	p, err := Read(strings.NewReader(page), "", "p.prom", modelserver.VLLM)
	if err != nil {
		t.Fatal(err)
	}
	if !math.IsNaN(p.Running) || !contains(p.Unknown, "running") || p.Waiting != 1 {
		t.Errorf("running %v waiting %v unknown %v: want running NaN and unknown, waiting 1", p.Running, p.Waiting, p.Unknown)
	}
	if !math.IsNaN(p.PromptTokens) || p.TTFT != nil {
		t.Errorf("prompt tokens %v TTFT %+v: want NaN and nil", p.PromptTokens, p.TTFT)
	}
	want := []string{
		"vllm:num_requests_running is declared a counter, infscale reads it as a gauge: its value is unknown",
		"vllm:prompt_tokens_total is declared a gauge, infscale reads it as a counter: its value is unknown",
		"vllm:time_to_first_token_seconds is declared a summary, infscale reads it as a histogram: its value is unknown",
	}
	if strings.Join(p.WrongType, "\n") != strings.Join(want, "\n") {
		t.Errorf("WrongType:\n%s\nwant:\n%s", strings.Join(p.WrongType, "\n"), strings.Join(want, "\n"))
	}
	// running is unknown by its type, not by a NaN sample (it was both).
	if len(p.NonFinite) != 0 {
		t.Errorf("NonFinite %v, want none: no sample is NaN", p.NonFinite)
	}
	// A NaN engine beside a wrong-typed family: waiting by the NaN.
	p, err = Read(strings.NewReader("# TYPE vllm:num_requests_running counter\nvllm:num_requests_running 3\nvllm:num_requests_waiting{engine=\"0\"} 1\nvllm:num_requests_waiting{engine=\"1\"} NaN\n"), "", "p.prom", modelserver.VLLM)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(p.Unknown, ",") != "running,waiting" || strings.Join(p.NonFinite, ",") != "waiting" {
		t.Errorf("unknown %v, non-finite %v; want running,waiting and waiting", p.Unknown, p.NonFinite)
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
