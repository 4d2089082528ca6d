package promql

import (
	"strings"
	"testing"
)

// TestReplicasQueryEmptyHint: two vLLM pods scraped, and a target whose
// replicas: query is the README's kube_deployment_spec_replicas, in a
// Prometheus without kube-state-metrics (a new user's local Prometheus).
// The current replicas are unknown, so serve never decides the target,
// and the error said only "no series (query: ...)". It now says that 2
// pods report (by hand: chat-1 and chat-2), where the series come from
// and what to do. With kube-state-metrics scraped the same query reads 3;
// without the replicas: key the pods reporting, 2, are current.
func TestReplicasQueryEmptyHint(t *testing.T) {
	const pods = `
  vllm:num_requests_running{namespace="llm",pod="chat-1"} 4x40
  vllm:num_requests_running{namespace="llm",pod="chat-2"} 6x40
  vllm:num_requests_waiting{namespace="llm",pod="chat-1"} 0x40
  vllm:num_requests_waiting{namespace="llm",pod="chat-2"} 1x40
  up{namespace="llm",pod="chat-1"} 1x40
  up{namespace="llm",pod="chat-2"} 1x40
`

	tg := sel(t, `{namespace="llm"}`)
	tg.Replicas = `kube_deployment_spec_replicas{namespace="llm",deployment="chat"}`
	r := evalOne(t, newEngineAPI(t, pods), tg, Options{})
	if r.Values[Running] != 10 || r.Values[Reporting] != 2 {
		t.Fatalf("running %v reporting %v, want 10 and 2", r.Values[Running], r.Values[Reporting])
	}
	err := r.Errors[Current]
	if ReasonOf(err) != ReasonEmpty {
		t.Fatalf("current %v (%v), want unknown, reason empty", r.Values[Current], err)
	}
	for _, want := range []string{"no series, while 2 pod(s) report", "it is not decided", "kube-state-metrics", "leave replicas: out", "scaleTargetRef", "(query: kube_deployment_spec_replicas{"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}

	r = evalOne(t, newEngineAPI(t, pods+`  kube_deployment_spec_replicas{namespace="llm",deployment="chat"} 3x40`+"\n"), tg, Options{})
	if r.Errors[Current] != nil || r.Values[Current] != 3 {
		t.Errorf("with kube-state-metrics: current %v (%v), want 3", r.Values[Current], r.Errors[Current])
	}

	tg.Replicas = ""
	r = evalOne(t, newEngineAPI(t, pods), tg, Options{})
	if r.Errors[Current] != nil || r.Values[Current] != 2 {
		t.Errorf("no replicas query: current %v (%v), want the 2 pods reporting", r.Values[Current], r.Errors[Current])
	}
}
