package promql

import (
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/modelserver"
)

// TestHistoryQueries: a backtest reads the shapes serve reads live (the
// same Running, Waiting and Reporting text, the totals without their
// guard against a pod below 0: live, the guard's `(min(...) < 0) or ` is
// before the same sum), and its own counters and
// histograms with HA duplicates collapsed and family alternatives joined
// with or.
func TestHistoryQueries(t *testing.T) {
	sel, err := ParseSelector(`{namespace="llm"}`)
	if err != nil {
		t.Fatal(err)
	}
	live, err := buildExprs(Target{Name: "chat", Server: modelserver.VLLM, Selector: sel}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := HistoryQueries(Target{Server: modelserver.VLLM, Selector: sel}, Options{}, time.Hour, "vllm:request_prompt_tokens", "")
	if err != nil {
		t.Fatal(err)
	}
	unguarded, err := build(Target{Name: "chat", Server: modelserver.VLLM, Selector: sel}, Options{}, false)
	if err != nil {
		t.Fatal(err)
	}
	if h.Running != unguarded[Running].String() || h.Waiting != unguarded[Waiting].String() || h.Replicas != live[Reporting].String() {
		t.Errorf("history totals differ from the live signals:\n%s\n%s\n%s", h.Running, h.Waiting, h.Replicas)
	}
	for _, s := range []Signal{Running, Waiting} {
		if got := live[s].String(); !strings.HasPrefix(got, "(min(") || !strings.HasSuffix(got, ") < 0) or "+unguarded[s].String()) {
			t.Errorf("live %s %s: want (min(<per pod>) < 0) or <the history's>", s, got)
		}
	}
	// Copies of a pod's series (HA pairs, two scrape jobs) fold on the pod's identity.
	key := "namespace, pod, engine, dp_rank, tp_rank, pp_rank, model_name, name, model"
	reasons := "max by (" + key + ", finished_reason) "
	bucketDedup := "max by (namespace, pod, engine, dp_rank, tp_rank, pp_rank, model_name, name, model, le) "
	for name, c := range map[string]struct{ got, want string }{
		"success": {h.Success, `vllm:request_success_total{namespace="llm",server=""} or on (` + key +
			`) vllm:e2e_request_latency_seconds_count{namespace="llm",server=""}`},
		"timestamps": {h.SuccessTimestamps, `timestamp(vllm:request_success_total{namespace="llm",server=""}) or on (` + key +
			`) timestamp(vllm:e2e_request_latency_seconds_count{namespace="llm",server=""})`},
		"prompt": {h.PromptHist, `sum by (le) (` + bucketDedup + `(increase(vllm:request_prompt_tokens_bucket{namespace="llm",server=""}[1h])))`},
		"output": {h.OutputHist, ``},
		"ttft hourly": {h.TTFTHourly, `histogram_quantile(0.95, sum by (le) (` + bucketDedup +
			`(increase(vllm:time_to_first_token_seconds_bucket{namespace="llm",server=""}[1h]))))`},
		// A pod's finished reasons are summed (sum by the key of max by the key and the reason).
		"prompt mean": {h.PromptMean, `sum(sum by (` + key + `) (` + reasons + `(increase(vllm:prompt_tokens_total{namespace="llm",server=""}[1h])))) / sum(sum by (` +
			key + `) (` + reasons + `(increase(vllm:request_success_total{namespace="llm",server=""}[1h]))) or sum by (` +
			key + `) (` + reasons + `(increase(vllm:e2e_request_latency_seconds_count{namespace="llm",server=""}[1h]))))`},
	} {
		if c.got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", name, c.got, c.want)
		}
	}
	// SGLang has two names for its success counter: both, first wins.
	h, err = HistoryQueries(Target{Server: modelserver.SGLang, Selector: sel}, Options{}, time.Hour, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if want := `sglang:num_requests_total{namespace="llm"} or on (` + key + `, worker_addr) sglang_num_requests_total{namespace="llm"}`; h.Success != want {
		t.Errorf("sglang success %s, want %s", h.Success, want)
	}
	// A replicas query is run as given.
	h, err = HistoryQueries(Target{Server: modelserver.VLLM, Selector: sel, Replicas: `sum(kube_deployment_spec_replicas{deployment="chat"})`}, Options{}, time.Hour, "", "")
	if err != nil || h.Replicas != `sum(kube_deployment_spec_replicas{deployment="chat"})` {
		t.Errorf("replicas %q, %v", h.Replicas, err)
	}
	if _, err := HistoryQueries(Target{Server: modelserver.LlamaCpp, Selector: sel}, Options{}, time.Hour, "", ""); err == nil || !strings.Contains(err.Error(), "success counter and a running gauge") {
		t.Errorf("a profile without a success counter: %v", err)
	}
}
