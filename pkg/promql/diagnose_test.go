package promql

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/internal/promtest"
	"github.com/infscale/infscale/pkg/modelserver"
)

// TestDiagnose: each kind of selector that finds none of the server's
// series gets its own sentence, worked out from the names alone; a
// selector holding any of the server's families (a histogram by its
// _bucket series) gets none.
func TestDiagnose(t *testing.T) {
	chat, err := ParseSelector(`{namespace="llm", pod=~"chat-.*"}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		server modelserver.Server
		names  []string
		want   string
	}{
		{"nothing", modelserver.VLLM, nil,
			`no series in Prometheus match the selector {namespace="llm",pod=~"chat-.*"} in the range: its labels match nothing (compare them with count by (job, namespace, pod) (up))`},
		{"the server's gauge", modelserver.VLLM, []string{"up", "vllm:num_requests_running"}, ""},
		{"the server's histogram", modelserver.VLLM, []string{"vllm:time_to_first_token_seconds_bucket"}, ""},
		{"the server's namespace", modelserver.VLLM, []string{"vllm:cache_config_info"}, ""},
		{"another server", modelserver.VLLM, []string{"sglang:num_running_reqs", "up"},
			`the series the selector {namespace="llm",pod=~"chat-.*"} matches are sglang's (sglang:num_running_reqs), not vllm's: is the server sglang?`},
		{"renamed", modelserver.VLLM, []string{"up", "vllm_num_requests_running"},
			`the selector {namespace="llm",pod=~"chat-.*"} matches vllm_num_requests_running, vllm's vllm:num_requests_running with '_' for ':': a collector or remote-write path renamed it; infscale reads the names the server exports (export them unchanged)`},
		{"renamed histogram", modelserver.VLLM, []string{"vllm_time_to_first_token_seconds_count"},
			`the selector {namespace="llm",pod=~"chat-.*"} matches vllm_time_to_first_token_seconds_count, vllm's vllm:time_to_first_token_seconds with '_' for ':'`},
		{"other names", modelserver.VLLM, []string{"g", "f", "e", "d", "c", "b", "a"},
			`the selector {namespace="llm",pod=~"chat-.*"} matches 7 metric names (a, b, c, d, e and 2 more), none of them vllm's (such as vllm:num_requests_running): does it select the model server's pods?`},
		{"auto, any server's", modelserver.Unknown, []string{"sglang:num_running_reqs"}, ""},
		{"auto, none", modelserver.Unknown, []string{"up"},
			`the selector {namespace="llm",pod=~"chat-.*"} matches 1 metric name (up), none of them a known model server's (such as vllm:num_requests_running)`},
	} {
		got := Diagnose(c.names, c.server, chat, "in the range")
		if (c.want == "") != (got == "") || !strings.HasPrefix(got, c.want) {
			t.Errorf("%s: %q\nwant %q", c.name, got, c.want)
		}
	}
}

// TestNamesRealPrometheus: Client.Names lists, from a real Prometheus, the
// metric names of the series a selector matches (a vLLM page's families
// scraped under pod="chat-1"; under pod="nope" none), and Diagnose reads
// them: nothing to say for chat, "match nothing" for nope.
func TestNamesRealPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Prometheus")
	}
	pod := counterPod(t, map[string]string{"vllm:prompt_tokens_total": "counter"}, map[string]float64{`vllm:prompt_tokens_total{model_name="m"}`: 10})
	prom := promtest.Start(t, promtest.Options{ScrapeInterval: time.Second, Targets: []promtest.Target{
		{URL: pod.URL + "/metrics", Labels: map[string]string{"namespace": "llm", "pod": "chat-1"}}}})
	prom.WaitFor(t, `count(vllm:prompt_tokens_total)`, 60*time.Second, func(v model.Vector) bool { return len(v) == 1 })
	c, err := NewClient(ClientConfig{URL: prom.URL, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for sel, want := range map[string]string{`{pod="chat-1"}`: "", `{pod="nope"}`: `no series in Prometheus match the selector {pod="nope"} now:`} {
		ms, err := ParseSelector(sel)
		if err != nil {
			t.Fatal(err)
		}
		names, err := c.Names(context.Background(), ms, now.Add(-time.Minute), now)
		if err != nil {
			t.Fatal(err)
		}
		if sel == `{pod="chat-1"}` && !slices.Contains(names, "vllm:prompt_tokens_total") {
			t.Errorf("%s: names %v, want vllm:prompt_tokens_total among them", sel, names)
		}
		if got := Diagnose(names, modelserver.VLLM, ms, "now"); (want == "") != (got == "") || !strings.HasPrefix(got, want) {
			t.Errorf("%s: %q, want %q", sel, got, want)
		}
	}
	if _, err := c.Names(context.Background(), nil, now.Add(-time.Minute), now); err == nil {
		t.Error("no matcher: no error")
	}
}
