package promql

import (
	"context"
	"fmt"
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
			`no series in Prometheus match the selector {namespace="llm",pod=~"chat-.*"} in the range: its labels match nothing (compare them with count by (job, namespace, service, pod) (up))`},
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

// TestDiagnoseSelectorOutsideSpan: a real Prometheus holding
// vllm:num_requests_running{namespace="llm"} from 10:00 to 12:00 only.
// Over 10:30..11:00 the selector holds the server's family: nothing to
// say. Over 14:00..15:00 it has no series, but Prometheus holds the ones
// it matches: said so, naming them (it was called a selector whose labels
// match nothing, sending the user to fix a right selector for a wrong
// range). {namespace="nope"} matches nothing at any time.
func TestDiagnoseSelectorOutsideSpan(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Prometheus")
	}
	t0 := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	c := runningHistory(t, t0, 2*time.Hour, `{namespace="llm",pod="chat-1"}`)
	for _, tc := range []struct {
		sel        string
		start, end time.Duration
		want       string
	}{
		{`{namespace="llm"}`, 30 * time.Minute, time.Hour, ""},
		{`{namespace="llm"}`, 4 * time.Hour, 5 * time.Hour,
			`no series match the selector {namespace="llm"} in the range, but Prometheus holds series it matches outside that span, 1 metric name (vllm:num_requests_running): check the span and Prometheus's retention, and whether they are still scraped`},
		{`{namespace="nope"}`, 4 * time.Hour, 5 * time.Hour,
			`no series in Prometheus match the selector {namespace="nope"} in the range: its labels match nothing`},
	} {
		ms, err := ParseSelector(tc.sel)
		if err != nil {
			t.Fatal(err)
		}
		got := DiagnoseSelector(context.Background(), c, modelserver.VLLM, ms, t0.Add(tc.start), t0.Add(tc.end), "in the range")
		if (tc.want == "") != (got == "") || !strings.HasPrefix(got, tc.want) || (tc.want != "" && strings.Contains(tc.want, "outside") && got != tc.want) {
			t.Errorf("%s over +%s..+%s: %q\nwant %q", tc.sel, tc.start, tc.end, got, tc.want)
		}
	}
}

// TestDiagnoseSelectorServerLabel: a vLLM target's queries add server=""
// to its selector (the production-stack router's copies of its engines'
// series carry server). When every vLLM series the selector matches
// carries the label (an external label or relabelling named server, or a
// selector of the router's pod alone), each signal reads no series while
// the selector plainly holds vLLM's families, so Diagnose said nothing;
// now it says the label is why and what to do. A selector that names
// server itself, or whose engines' series lack it, gets nothing.
func TestDiagnoseSelectorServerLabel(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Prometheus")
	}
	t0 := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	c := runningHistory(t, t0, time.Hour, `{namespace="labelled",pod="chat-1",server="prom-a"}`,
		`{namespace="llm",pod="chat-1"}`, `{namespace="llm",pod="router-1",server="http://chat-1:8000"}`)
	for _, tc := range []struct {
		sel, want string
	}{
		{`{namespace="labelled"}`, `the vllm series the selector {namespace="labelled"} matches in the range all carry a server label, which infscale's queries leave out as the vLLM production-stack router's copies of its engines' series ({namespace="labelled",server=""}): if your engines' series carry it (a relabelling or an external label), name it in the selector (server=~".+"), else select the engines' pods, not the router's`},
		{`{namespace="llm",pod="router-1"}`, `the vllm series the selector {namespace="llm",pod="router-1"} matches in the range all carry a server label`},
		{`{namespace="labelled",server="prom-a"}`, ""},
		{`{namespace="llm"}`, ""},
	} {
		ms, err := ParseSelector(tc.sel)
		if err != nil {
			t.Fatal(err)
		}
		got := DiagnoseSelector(context.Background(), c, modelserver.VLLM, ms, t0.Add(10*time.Minute), t0.Add(20*time.Minute), "in the range")
		if (tc.want == "") != (got == "") || !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s: %q\nwant %q", tc.sel, got, tc.want)
		}
	}
}

// runningHistory starts a real Prometheus holding vllm:num_requests_running
// at 3 for each label set (`{...}`) every 15 s over [t0, t0+span), and
// returns a client of it.
func runningHistory(t *testing.T, t0 time.Time, span time.Duration, labelSets ...string) *Client {
	t.Helper()
	var b strings.Builder
	b.WriteString("# TYPE vllm:num_requests_running gauge\n")
	for at := t0; at.Before(t0.Add(span)); at = at.Add(15 * time.Second) {
		for _, ls := range labelSets {
			fmt.Fprintf(&b, "vllm:num_requests_running%s 3 %d\n", ls, at.Unix())
		}
	}
	b.WriteString("# EOF\n")
	prom := promtest.Start(t, promtest.Options{DataDir: promtest.Backfill(t, b.String()), Flags: []string{"--storage.tsdb.retention.time=10y"}})
	c, err := NewClient(ClientConfig{URL: prom.URL, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return c
}
