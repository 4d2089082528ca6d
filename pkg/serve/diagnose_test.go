package serve

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/infscale/infscale/internal/promtest"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/promql"
)

// TestSelectorDiagnosis: on a real Prometheus, a vllm target whose
// selector holds an SGLang server's series, and one whose selector matches
// nothing, read empty; the source asks Prometheus for the names under each
// selector off the cycle, and the next reading of each says why (another
// server's series; labels that match nothing), once. A target whose
// selector holds its server's series says nothing. The names are asked
// again only after diagnoseEvery (10 minutes).
func TestSelectorDiagnosis(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a real Prometheus")
	}
	page := func(body string) *httptest.Server {
		s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, body) }))
		t.Cleanup(s.Close)
		return s
	}
	sg := page("# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs{model_name=\"m\"} 3\n")
	vl := page("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 3\n")
	prom := promtest.Start(t, promtest.Options{ScrapeInterval: time.Second, Targets: []promtest.Target{
		{URL: sg.URL + "/metrics", Labels: map[string]string{"namespace": "llm", "pod": "sg-0"}},
		{URL: vl.URL + "/metrics", Labels: map[string]string{"namespace": "llm", "pod": "vl-0"}},
	}})
	prom.WaitFor(t, `count(sglang:num_running_reqs) + count(vllm:num_requests_running)`, 60*time.Second, func(v model.Vector) bool { return len(v) == 1 })
	cfg, err := config.Parse([]byte(fmt.Sprintf(`
prometheus: {url: %s}
targets:
- {name: sg, server: vllm, selector: '{namespace="llm", pod="sg-0"}', metrics: [{type: queue, target: 4}], max: 8}
- {name: none, server: vllm, selector: '{namespace="llm", pod="nope"}', metrics: [{type: queue, target: 4}], max: 8}
- {name: vl, server: vllm, selector: '{namespace="llm", pod="vl-0"}', metrics: [{type: kv, target: 0.8}], max: 8}
`, prom.URL)), "diagnose.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src, err := NewPrometheusSource(cfg.Prometheus)
	if err != nil {
		t.Fatal(err)
	}
	targets := []*config.Target{&cfg.Targets[0], &cfg.Targets[1], &cfg.Targets[2]}
	read := func(at time.Time) []string {
		rd := src.Read(t.Context(), targets, at)
		src.diag.wg.Wait()
		return []string{rd[0].Diagnosis, rd[1].Diagnosis, rd[2].Diagnosis}
	}
	now := time.Now()
	if got := read(now); got[0]+got[1]+got[2] != "" {
		t.Fatalf("first reading: %q, want none yet (asked off the cycle)", got)
	}
	got := read(now.Add(15 * time.Second))
	wants := []string{
		`the series the selector {namespace="llm",pod="sg-0"} matches are sglang's (sglang:num_running_reqs), not vllm's: is the server sglang?`,
		`no series in Prometheus match the selector {namespace="llm",pod="nope"} in the last 5 minutes: its labels match nothing`,
		"", // vl's kv gauge is absent, but its selector holds vLLM's series
	}
	for i, w := range wants {
		if (w == "") != (got[i] == "") || !strings.HasPrefix(got[i], w) {
			t.Errorf("%s: %q, want %q", targets[i].Name, got[i], w)
		}
	}
	if got := read(now.Add(30 * time.Second)); got[0]+got[1]+got[2] != "" {
		t.Errorf("third reading: %q, want none (each said once, not asked again within 10 minutes)", got)
	}
	for k, at := range src.diag.asked { // as if asked 10 minutes earlier
		src.diag.asked[k] = at.Add(-diagnoseEvery)
	}
	read(now.Add(45 * time.Second))
	if got := read(now.Add(60 * time.Second)); got[0] == "" || got[1] == "" || got[2] != "" {
		t.Errorf("after 10 minutes: %q, want sg and none said again", got)
	}
}

// emptyNamer is a Prometheus with no series: every query answers an
// empty vector, every names request an empty list; names counts the
// diagnoses asked (the requests over a span: each diagnosis that finds
// none asks again over all the data). A names request waits for gate
// to close, when set.
type emptyNamer struct {
	mu    sync.Mutex
	names int
	gate  chan struct{}
}

func (e *emptyNamer) Instant(context.Context, string, time.Time) (model.Vector, []string, error) {
	return model.Vector{}, nil, nil
}

func (e *emptyNamer) Range(context.Context, string, time.Time, time.Time, time.Duration) (model.Matrix, []string, error) {
	return model.Matrix{}, nil, nil
}

func (e *emptyNamer) Names(_ context.Context, _ []*labels.Matcher, start, _ time.Time) ([]string, error) {
	e.mu.Lock()
	gate := e.gate
	if !start.IsZero() {
		e.names++
	}
	e.mu.Unlock()
	if gate != nil {
		<-gate
	}
	return nil, nil
}

// TestSelectorDiagnosisBounded: six targets whose selectors match nothing
// are diagnosed diagnoseAtOnce (4) at a time: the first reading asks for
// 4, the next gives those 4 and asks for the other 2, the third gives
// those 2; nothing more is asked within diagnoseEvery.
func TestSelectorDiagnosisBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("prometheus: {url: http://127.0.0.1:9}\ntargets:\n")
	for i := range 6 {
		fmt.Fprintf(&b, "- {name: t%d, server: vllm, selector: '{pod=\"t%d\"}', metrics: [{type: queue, target: 4}], max: 8}\n", i, i)
	}
	cfg, err := config.Parse([]byte(b.String()), "bounded.yaml")
	if err != nil {
		t.Fatal(err)
	}
	api := &emptyNamer{}
	src := &PrometheusSource{Evaluator: &promql.Evaluator{API: api}}
	var targets []*config.Target
	for i := range cfg.Targets {
		targets = append(targets, &cfg.Targets[i])
	}
	now := time.Now()
	for k, want := range []struct{ said, asked int }{{0, 4}, {4, 6}, {2, 6}, {0, 6}} {
		// The diagnoses started wait until the Read is over: none ends
		// and frees its place while the Read is under way.
		gate := make(chan struct{})
		api.mu.Lock()
		api.gate = gate
		api.mu.Unlock()
		rd := src.Read(t.Context(), targets, now.Add(time.Duration(k)*15*time.Second))
		close(gate)
		src.diag.wg.Wait()
		said := 0
		for _, r := range rd {
			if r.Diagnosis != "" {
				said++
			}
		}
		if said != want.said || api.names != want.asked {
			t.Errorf("reading %d: %d said, %d asked in all; want %d and %d", k+1, said, api.names, want.said, want.asked)
		}
	}
}

// TestSelectorDiagnosisForgets: two targets whose selectors match
// nothing are diagnosed at 12:00, then a reload leaves only a third. When
// the third is diagnosed at 12:10 the first two's entries, 10 minutes old
// (diagnoseEvery) and their diagnoses never given, are forgotten: the
// source keeps 1 target's, not every target it ever read (3).
func TestSelectorDiagnosisForgets(t *testing.T) {
	cfg, err := config.Parse([]byte(`prometheus: {url: http://127.0.0.1:9}
targets:
- {name: a, server: vllm, selector: '{pod="a"}', metrics: [{type: queue, target: 4}], max: 8}
- {name: b, server: vllm, selector: '{pod="b"}', metrics: [{type: queue, target: 4}], max: 8}
- {name: c, server: vllm, selector: '{pod="c"}', metrics: [{type: queue, target: 4}], max: 8}
`), "forget.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src := &PrometheusSource{Evaluator: &promql.Evaluator{API: &emptyNamer{}}}
	now := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	src.Read(t.Context(), []*config.Target{&cfg.Targets[0], &cfg.Targets[1]}, now)
	src.diag.wg.Wait()
	src.Read(t.Context(), []*config.Target{&cfg.Targets[2]}, now.Add(diagnoseEvery))
	src.diag.wg.Wait()
	src.diag.mu.Lock()
	defer src.diag.mu.Unlock()
	if len(src.diag.asked) != 1 || len(src.diag.ready) != 1 || src.diag.ready[cfg.Targets[2].Key()] == "" {
		t.Errorf("asked %v, ready %v: want c's alone", src.diag.asked, src.diag.ready)
	}
}

// fillingNamer is emptyNamer until filled: then every query answers one
// sample, 3 (Prometheus after its first scrapes).
type fillingNamer struct {
	emptyNamer
	filled bool
}

func (f *fillingNamer) Instant(context.Context, string, time.Time) (model.Vector, []string, error) {
	if !f.filled {
		return model.Vector{}, nil, nil
	}
	return model.Vector{{Metric: model.Metric{}, Value: 3}}, nil, nil
}

// TestSelectorDiagnosisDroppedOnceRead: serve starts before Prometheus
// has scraped the target: the first reading is empty and asks for a
// diagnosis ("its labels match nothing", true then). Prometheus scrapes;
// the next reading has the series (running 3), so the diagnosis finished
// meanwhile is not given: it was, and serve logged "its labels match
// nothing" beside a decision on those series.
func TestSelectorDiagnosisDroppedOnceRead(t *testing.T) {
	cfg, err := config.Parse([]byte(`prometheus: {url: http://127.0.0.1:9}
targets:
- {name: a, server: vllm, selector: '{pod="a"}', metrics: [{type: queue, target: 4}], max: 8}
`), "filling.yaml")
	if err != nil {
		t.Fatal(err)
	}
	api := &fillingNamer{}
	src := &PrometheusSource{Evaluator: &promql.Evaluator{API: api}}
	targets := []*config.Target{&cfg.Targets[0]}
	now := time.Now()
	rd := src.Read(t.Context(), targets, now)
	src.diag.wg.Wait()
	if rd[0].Diagnosis != "" || api.names != 1 {
		t.Fatalf("first reading: diagnosis %q, %d asked; want none yet and 1 asked", rd[0].Diagnosis, api.names)
	}
	api.filled = true
	rd = src.Read(t.Context(), targets, now.Add(15*time.Second))
	if rd[0].Obs.Running != 3 {
		t.Fatalf("second reading: running %v, want 3", rd[0].Obs.Running)
	}
	if rd[0].Diagnosis != "" {
		t.Errorf("second reading, series found: diagnosis %q, want none", rd[0].Diagnosis)
	}
	if _, ok := src.diag.ready["a"]; ok {
		t.Error("the stale diagnosis is still kept")
	}
}
