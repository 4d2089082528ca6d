package promql

import (
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/modelserver"
)

// TestCalibrationQueries: per pod, a window's means with HA copies folded
// on the pod's identity, and vLLM's two ITL names joined with or.
func TestCalibrationQueries(t *testing.T) {
	sel, err := ParseSelector(`{namespace="llm"}`)
	if err != nil {
		t.Fatal(err)
	}
	c, err := CalibrationQueries(Target{Server: modelserver.VLLM, Selector: sel}, Options{}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	pod := func(e string) string {
		return "sum by (pod) (max by (namespace, pod, engine, dp_rank, tp_rank, pp_rank, model_name, name, model) (" + e + "))"
	}
	rate := func(f string) string { return pod(`rate(` + f + `{namespace="llm",server=""}[1m])`) }
	for name, tc := range map[string]struct{ got, want string }{
		"running": {c.Running, pod(`avg_over_time(vllm:num_requests_running{namespace="llm",server=""}[1m])`)},
		"waiting": {c.Waiting, pod(`max_over_time(vllm:num_requests_waiting{namespace="llm",server=""}[1m])`)},
		"itl": {c.ITL, rate("vllm:inter_token_latency_seconds_sum") + " / " + rate("vllm:inter_token_latency_seconds_count") +
			" or (" + rate("vllm:time_per_output_token_seconds_sum") + " / " + rate("vllm:time_per_output_token_seconds_count") + ")"},
		"ttft":   {c.TTFT, rate("vllm:time_to_first_token_seconds_sum") + " / " + rate("vllm:time_to_first_token_seconds_count")},
		"prompt": {c.Prompt, rate("vllm:prompt_tokens_total") + " / " + rate("vllm:time_to_first_token_seconds_count")},
	} {
		if tc.got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", name, tc.got, tc.want)
		}
		if _, err := Validate(tc.got); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// SGLang exports both histograms (sglang:inter_token_latency_seconds
	// and sglang:time_to_first_token_seconds, its metrics collector), with
	// the underscore spelling of older releases as the alternative.
	c, err = CalibrationQueries(Target{Server: modelserver.SGLang, Selector: sel}, Options{}, time.Minute)
	if err != nil || !strings.Contains(c.ITL, "sglang:inter_token_latency_seconds_sum") || !strings.Contains(c.TTFT, "sglang:time_to_first_token_seconds_count") {
		t.Errorf("sglang: ITL %q, TTFT %q, %v", c.ITL, c.TTFT, err)
	}
	if _, err := CalibrationQueries(Target{Server: modelserver.LlamaCpp, Selector: sel}, Options{}, time.Minute); err == nil || !strings.Contains(err.Error(), "running gauge") {
		t.Errorf("llamacpp (no success counter): %v", err)
	}
}
