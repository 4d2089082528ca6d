package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/internal/promtest"
	"github.com/infscale/infscale/internal/svgtest"
	"github.com/infscale/infscale/pkg/synthweek"
)

// pairHistory backfills two hours of a P/D pair's series, scraped every
// minute from first (a whole hour), into a real Prometheus and returns
// its URL. Each pool has one pod; per minute both pools complete 30
// requests (0.5/s). The prefill pod's prompt counter grows 30 x 1,000
// tokens a minute and its generation counter 30 x 1 (max_tokens=1); the
// decode pod's generation counter grows 30 x 200. The prefill pod runs
// nothing but 3 requests at the last scrape; the decode pod runs
// nothing. kube_deployment_spec_replicas: chat-prefill 1 for the first
// hour and 2 for the second, chat-decode 2 then 3. The pods' series carry
// llm-d's role label as a scrape copies it (llm_d_ai_role).
func pairHistory(t *testing.T, first time.Time) string { return pairHistorySkip(t, first, nil) }

// pairHistorySkip is pairHistory without the scrapes skip reports (minute
// k of first; nil: none), a Prometheus or its scraping down.
func pairHistorySkip(t *testing.T, first time.Time, skip func(k int) bool) string {
	var b bytes.Buffer
	bw := bufio.NewWriter(&b)
	const n = 121 // scrapes at first + 0, 1, ..., 120 minutes
	e := &synthweek.Emitter{W: bw, Start: first.Unix(), Step: 60, Skip: skip}
	ramp := func(start, per float64) []float64 {
		vs := make([]float64, n)
		for i := range vs {
			vs[i] = start + per*float64(i)
		}
		return vs
	}
	steps := func(a, b float64) []float64 {
		vs := make([]float64, n)
		for i := range vs {
			vs[i] = a
			if i >= 60 {
				vs[i] = b
			}
		}
		return vs
	}
	running := make([]float64, n)
	running[n-1] = 3
	pods := []struct {
		labels                           string
		success, prompt, output, running []float64
	}{
		{`namespace="llm",pod="chat-prefill-0",llm_d_ai_role="prefill"`, ramp(1000, 30), ramp(1e6, 30*1000), ramp(1000, 30), running},
		{`namespace="llm",pod="chat-decode-0",llm_d_ai_role="decode"`, ramp(5000, 30), ramp(5e6, 30*1000), ramp(1e6, 30*200), make([]float64, n)},
	}
	e.Family("up", "gauge")
	for _, p := range pods {
		e.Series("up", p.labels, 0, ramp(1, 0))
	}
	for _, f := range []struct {
		family, name, typ string
		vals              func(i int) []float64
	}{
		{"vllm:request_success", "vllm:request_success_total", "counter", func(i int) []float64 { return pods[i].success }},
		{"vllm:prompt_tokens", "vllm:prompt_tokens_total", "counter", func(i int) []float64 { return pods[i].prompt }},
		{"vllm:generation_tokens", "vllm:generation_tokens_total", "counter", func(i int) []float64 { return pods[i].output }},
		{"vllm:num_requests_running", "vllm:num_requests_running", "gauge", func(i int) []float64 { return pods[i].running }},
		{"vllm:num_requests_waiting", "vllm:num_requests_waiting", "gauge", func(int) []float64 { return make([]float64, n) }},
	} {
		e.Family(f.family, f.typ)
		for i, p := range pods {
			e.Series(f.name, p.labels, 0, f.vals(i))
		}
	}
	e.Family("kube_deployment_spec_replicas", "gauge")
	e.Series("kube_deployment_spec_replicas", `namespace="llm",deployment="chat-prefill"`, 0, steps(1, 2))
	e.Series("kube_deployment_spec_replicas", `namespace="llm",deployment="chat-decode"`, 0, steps(2, 3))
	bw.WriteString("# EOF\n")
	if err := bw.Flush(); err != nil || e.Err != nil {
		t.Fatal(err, e.Err)
	}
	data := promtest.Backfill(t, b.String())
	return promtest.Start(t, promtest.Options{DataDir: data, Flags: []string{"--storage.tsdb.retention.time=30d"}}).URL
}

// pairConfig writes a serve config of P/D target chat over url; decode is
// the decode role's selector.
func pairConfig(t *testing.T, url, decode string) string {
	cfg := filepath.Join(t.TempDir(), "pair.yaml")
	yaml := `prometheus: {url: "` + url + `"}
targets:
- name: chat
  replica: {gpu: h100-sxm, model: llama-3-8b}
  roles:
    prefill:
      selector: '{namespace="llm",pod=~"chat-prefill-.*"}'
      replicas: 'sum(kube_deployment_spec_replicas{namespace="llm",deployment="chat-prefill"})'
      metrics: [{type: demand, target: 0.9}]
      maxReplicaCount: 8
    decode:
      selector: '` + decode + `'
      replicas: 'sum(kube_deployment_spec_replicas{namespace="llm",deployment="chat-decode"})'
      metrics: [{type: demand, target: 0.9}]
      maxReplicaCount: 8
`
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestBacktestPairHistory: backtest and tune on a P/D target's history
// in a real Prometheus (pairHistory), with figures worked by hand.
func TestBacktestPairHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled history")
	}
	first := time.Now().UTC().Add(-5 * time.Hour).Truncate(time.Hour)
	url := pairHistory(t, first)
	cfg := pairConfig(t, url, `{namespace="llm",pod=~"chat-decode-.*"}`)
	rng := []string{"--start", fmt.Sprint(first.Unix()), "--end", fmt.Sprint(first.Add(2 * time.Hour).Unix()), "--step", "1m"}

	args := append([]string{"backtest", "--config", cfg, "--target", "chat", "-q", "--output", "json",
		"-p", "pd(fixed:1;fixed:2)", "-p", "fixed:2", "-p", "recommended"}, rng...)
	var out, errb bytes.Buffer
	if code := run(context.Background(), args, nil, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rep struct {
		Requests       float64 `json:"requests"`
		DecodeRequests float64 `json:"decode_requests"`
		PromptMean     float64 `json:"prompt_tokens_mean"`
		OutputMean     float64 `json:"output_tokens_mean"`
		Actual         struct {
			Prefill   float64 `json:"prefill_replica_minutes"`
			Decode    float64 `json:"decode_replica_minutes"`
			Total     float64 `json:"replica_minutes"`
			PeakP     float64 `json:"prefill_peak"`
			PeakD     float64 `json:"decode_peak"`
			Simulated *struct {
				Prefill float64 `json:"prefill_replica_minutes"`
				Decode  float64 `json:"decode_replica_minutes"`
			} `json:"simulated"`
		} `json:"actual"`
		Policies []struct {
			Policy   string   `json:"policy"`
			Requests int64    `json:"requests"`
			Prefill  float64  `json:"prefill_replica_minutes"`
			Decode   float64  `json:"decode_replica_minutes"`
			Total    float64  `json:"replica_minutes"`
			Savings  *float64 `json:"savings_pct"`
		} `json:"policies"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	// Arrivals at the prefill pool: the counter's increase over the two
	// hours, 120 x 30 = 3,600, plus the 3 in flight at the end (0 at the
	// start): 3,603. The decode pool's own: 3,600 (nothing in flight).
	if rep.Requests != 3603 || rep.DecodeRequests != 3600 {
		t.Errorf("requests %g, decode %g; want 3603 and 3600", rep.Requests, rep.DecodeRequests)
	}
	// Prompt: 30,000 tokens a minute over 30 requests; output: the decode
	// pool's 6,000 over 30.
	if math.Abs(rep.PromptMean-1000) > 1e-6 || math.Abs(rep.OutputMean-200) > 1e-6 {
		t.Errorf("token means %g, %g; want 1000 and 200", rep.PromptMean, rep.OutputMean)
	}
	// What ran: prefill 60 min x 1 + 60 x 2 = 180, decode 60 x 2 + 60 x 3
	// = 300 replica-minutes; peaks 2 and 3.
	a := rep.Actual
	if a.Prefill != 180 || a.Decode != 300 || a.Total != 480 || a.PeakP != 2 || a.PeakD != 3 {
		t.Errorf("actual %+v; want prefill 180, decode 300, total 480 replica-minutes, peaks 2/3", a)
	}
	// Those timelines replayed: the step up at 60 min is decided within
	// a period (15 s), so each pool is within a quarter minute of it.
	if s := a.Simulated; s == nil || math.Abs(s.Prefill-180) > 0.25 || math.Abs(s.Decode-300) > 0.25 {
		t.Errorf("actual (simulated) %+v; want about 180 and 300", s)
	}
	// Rows: the target's own pair rule first, then the policies given.
	want := []string{"config:chat", "pd(fixed:1;fixed:2)", "fixed:2", "recommended"}
	if len(rep.Policies) != len(want) {
		t.Fatalf("policies %+v, want %v", rep.Policies, want)
	}
	for i, p := range rep.Policies {
		if p.Policy != want[i] || p.Requests != 3603 {
			t.Errorf("row %d: %s with %d requests; want %s replaying 3603", i, p.Policy, p.Requests, want[i])
		}
	}
	// pd(fixed:1;fixed:2) for 120 min: 120 + 240 = 360 replica-minutes,
	// (480 - 360) / 480 = 25% saved; fixed:2 on each pool: 240 + 240 = 480, 0%.
	for _, c := range []struct {
		i                      int
		pre, dec, tot, savings float64
	}{{1, 120, 240, 360, 25}, {2, 240, 240, 480, 0},
		// The pair rule, the target's own and the preset: 0.5 requests/s
		// keep 0.5 x 1,000 / 24,750 = 0.02 of a prefill replica busy
		// (docs/llm-d.md's reference replica), and the decode pool's 100
		// output tokens/s are 2% of its 6,154 at full batch: one replica
		// per pool for 120 min, 240 in all, 50% saved.
		{0, 120, 120, 240, 50}, {3, 120, 120, 240, 50}} {
		p := rep.Policies[c.i]
		if math.Abs(p.Prefill-c.pre) > 1e-9 || math.Abs(p.Decode-c.dec) > 1e-9 || math.Abs(p.Total-c.tot) > 1e-9 || p.Savings == nil || math.Abs(*p.Savings-c.savings) > 1e-9 {
			t.Errorf("%s: %+v; want %g + %g = %g replica-minutes, %g%% saved", p.Policy, p, c.pre, c.dec, c.tot, c.savings)
		}
	}

	// Text: both actual rows and each pool's columns.
	out.Reset()
	args = append([]string{"backtest", "--config", cfg, "--target", "chat", "-q", "-p", "fixed:2"}, rng...)
	if code := run(context.Background(), args, nil, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	t.Logf("\n%s", out.String())
	for _, s := range []string{"actual (observed)", "actual (simulated)", "prefill rmin", "decode rmin", "3603 reconstructed at the prefill pool (the decode pool's own: 3600)", "180.0", "300.0", "2/3"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("text lacks %q:\n%s", s, out.String())
		}
	}

	// --plot: four panels, both pools' replicas of the actual timelines
	// and of each policy, written as the one-pool plot is.
	out.Reset()
	errb.Reset()
	svg := filepath.Join(t.TempDir(), "pair.svg")
	args = append([]string{"backtest", "--config", cfg, "--target", "chat", "-q", "-p", "pd(fixed:1;fixed:2)", "--plot", svg}, rng...)
	if code := run(context.Background(), args, nil, &out, &errb); code != exitOK {
		t.Fatalf("--plot: exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "plot: wrote "+svg) {
		t.Errorf("stderr %q does not name the plot", errb.String())
	}
	raw, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := svgtest.Parse(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	// The legend's entries whole, the titles, the SLO and the first
	// hourly date tick within a text.
	for _, s := range []string{"actual", "config:chat", "pd(fixed:1;fixed:2)"} {
		if _, ok := doc.Find(s); !ok {
			t.Errorf("plot legend lacks %q", s)
		}
	}
	for _, s := range []string{"prefill pool", "decode pool", "TTFT p95 of the pair's path", "dashed: SLO 2s", first.Format("Jan 02 15:04")} {
		if !slices.ContainsFunc(doc.Texts, func(x svgtest.Text) bool { return strings.Contains(x.Body, s) }) {
			t.Errorf("plot lacks %q", s)
		}
	}
	for _, x := range doc.Outside(0.6) {
		t.Errorf("plot text %q ends outside the canvas", x.Body)
	}
	// An upper-case extension is the format, as simulate and tune take it
	// (backtest refused pair.PNG: "want a .png or .svg file").
	png := filepath.Join(t.TempDir(), "pair.PNG")
	args = append([]string{"backtest", "--config", cfg, "--target", "chat", "-q", "-p", "pd(fixed:1;fixed:2)", "--plot", png}, rng...)
	if code := run(context.Background(), args, nil, &out, &errb); code != exitOK {
		t.Errorf("--plot pair.PNG: exit %d: %s", code, errb.String())
	} else if raw, err := os.ReadFile(png); err != nil || !bytes.HasPrefix(raw, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("--plot pair.PNG: not a PNG file (the signature 89 50 4E 47 0D 0A 1A 0A): %v", err)
	}

	// tune on the pair's history searches tune --pd's grid.
	out.Reset()
	args = append([]string{"tune", "--config", cfg, "--target", "chat", "-q", "--stress", "none", "--finalists", "1", "-o", "json"}, rng...)
	if code := run(context.Background(), args, nil, &out, &errb); code != exitOK {
		t.Fatalf("tune: exit %d: %s", code, errb.String())
	}
	var tr struct {
		Policy string `json:"policy"`
		Rows   []struct {
			Policy string `json:"policy"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(out.Bytes(), &tr); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	// 5 prefill x 4 decode targets (docs/llm-d.md, "Tuning a pair").
	if !strings.HasPrefix(tr.Policy, "recommended(prefill=") || len(tr.Rows) != 20 {
		t.Errorf("tune: winner %q, %d rows; want recommended(prefill=..,decode=..) of 20", tr.Policy, len(tr.Rows))
	}

	out.Reset()
	tsvg := filepath.Join(t.TempDir(), "tune.svg")
	args = append([]string{"tune", "--config", cfg, "--target", "chat", "-q", "--stress", "none", "--finalists", "1", "--plot", tsvg}, rng...)
	if code := run(context.Background(), args, nil, &out, &errb); code != exitOK {
		t.Fatalf("tune: exit %d: %s", code, errb.String())
	}
	// tune --plot on a pair: the screened rows against both pools'
	// replica-minutes, the winner named.
	if raw, err := os.ReadFile(tsvg); err != nil {
		t.Errorf("tune --plot: %v", err)
	} else if doc, err := svgtest.Parse(string(raw)); err != nil {
		t.Errorf("tune --plot: %v", err)
	} else {
		for _, s := range []string{"winner: " + tr.Policy, "replica-minutes of both pools (screening sample)"} {
			if _, ok := doc.Find(s); !ok {
				t.Errorf("tune plot lacks %q", s)
			}
		}
	}
	if !strings.Contains(out.String(), "(P/D pair chat)") || !strings.Contains(out.String(), "llmd-tokens") {
		t.Errorf("tune text names neither the pair nor the llm-d baselines:\n%s", out.String())
	}
	t.Logf("\n%s", out.String())

	// A pool whose selector matches nothing: the role and its query named,
	// and why (no series under its labels at all).
	bad := pairConfig(t, url, `{namespace="llm",pod=~"nope-.*"}`)
	for _, cmd := range []string{"backtest", "tune"} {
		errb.Reset()
		args = append([]string{cmd, "--config", bad, "--target", "chat", "-q", "-p", "fixed:1"}, rng...)
		if cmd == "tune" {
			args = append([]string{cmd, "--config", bad, "--target", "chat", "-q"}, rng...)
		}
		code := run(context.Background(), args, nil, &out, &errb)
		for _, s := range []string{"target chat, decode pool: no request completed in the range", `vllm:request_success_total{namespace="llm",pod=~"nope-.*",server=""}`, "roles.decode.selector",
			`no series in Prometheus match the selector {namespace="llm",pod=~"nope-.*"} in the range: its labels match nothing`} {
			if code != exitRuntime || !strings.Contains(errb.String(), s) {
				t.Errorf("%s: exit %d, stderr %q; want exit %d naming %q", cmd, code, errb.String(), exitRuntime, s)
			}
		}
	}
}

// TestBacktestScaleTargetRefHistory: a target's or a role's
// scaleTargetRef, without a replicas: query, is read from
// kube-state-metrics' gauge of that workload (config.Target.HistoryReplicas)
// on pairHistory's Prometheus: chat-prefill at 1 replica for the first
// hour and 2 for the second (180 replica-minutes), chat-decode at 2 then 3
// (300). A kind kube-state-metrics does not export is warned about and
// read as the pods reporting (one pod per pool: 120 each).
func TestBacktestScaleTargetRefHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled history")
	}
	first := time.Now().UTC().Add(-5 * time.Hour).Truncate(time.Hour)
	url := pairHistory(t, first)
	rng := []string{"--start", fmt.Sprint(first.Unix()), "--end", fmt.Sprint(first.Add(2 * time.Hour).Unix()), "--step", "1m"}
	write := func(yaml string) string {
		p := filepath.Join(t.TempDir(), "c.yaml")
		if err := os.WriteFile(p, []byte(`prometheus: {url: "`+url+`"}
namespace: llm
targets:
`+yaml), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	role := func(name, kind, apiVersion string) string {
		return `      selector: '{namespace="llm",pod=~"chat-` + name + `-.*"}'
      scaleTargetRef: {apiVersion: ` + apiVersion + `, kind: ` + kind + `, name: chat-` + name + `}
      metrics: [{type: demand, target: 0.9}]
      maxReplicaCount: 8
`
	}
	pair := func(prefillKind, prefillAPI string) string {
		return write(`- name: chat
  replica: {gpu: h100-sxm, model: llama-3-8b}
  roles:
    prefill:
` + role("prefill", prefillKind, prefillAPI) + `    decode:
` + role("decode", "Deployment", "apps/v1"))
	}
	type actual struct {
		Actual struct {
			Prefill float64 `json:"prefill_replica_minutes"`
			Decode  float64 `json:"decode_replica_minutes"`
			Total   float64 `json:"replica_minutes"`
		} `json:"actual"`
	}
	backtest := func(cfg string, target string, v any, more ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		pol := "fixed:1"
		if target == "chat" {
			pol = "pd(fixed:1;fixed:1)"
		}
		args := []string{"backtest", "--config", cfg, "--target", target, "-q", "--output", "json", "-p", pol}
		args = append(append(args, more...), rng...)
		if code := run(context.Background(), args, nil, &out, &errb); code != exitOK {
			t.Fatalf("exit %d: %s", code, errb.String())
		}
		if err := json.Unmarshal(out.Bytes(), v); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		return errb.String()
	}

	var a actual
	if warn := backtest(pair("Deployment", "apps/v1"), "chat", &a); warn != "" || a.Actual.Prefill != 180 || a.Actual.Decode != 300 || a.Actual.Total != 480 {
		t.Errorf("pair of Deployments: %+v, stderr %q; want 180 + 300 = 480 replica-minutes, no warning", a.Actual, warn)
	}

	a = actual{}
	warn := backtest(pair("LeaderWorkerSet", "leaderworkerset.x-k8s.io/v1"), "chat", &a)
	if a.Actual.Prefill != 120 || a.Actual.Decode != 300 {
		t.Errorf("prefill LeaderWorkerSet: %+v; want the pods reporting, 120, and decode 300", a.Actual)
	}
	for _, s := range []string{"infscale: warning: ", "target chat@prefill", "exports no replicas gauge of leaderworkerset.x-k8s.io/v1 LeaderWorkerSet", "read as the pods reporting", "give --prefill-replicas-query Q"} {
		if !strings.Contains(warn, s) {
			t.Errorf("stderr %q lacks %q", warn, s)
		}
	}
	// ... which --prefill-replicas-query replaces.
	a = actual{}
	warn = backtest(pair("LeaderWorkerSet", "leaderworkerset.x-k8s.io/v1"), "chat", &a, "--prefill-replicas-query", `sum(kube_deployment_spec_replicas{namespace="llm",deployment="chat-prefill"})`)
	if warn != "" || a.Actual.Prefill != 180 || a.Actual.Decode != 300 {
		t.Errorf("--prefill-replicas-query: %+v, stderr %q; want 180 and 300, no warning", a.Actual, warn)
	}

	// One pool: the same rule.
	one := write(`- name: chat-prefill
  replica: {gpu: h100-sxm, model: llama-3-8b}
  selector: '{namespace="llm",pod=~"chat-prefill-.*"}'
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat-prefill}
  metrics: [{type: demand, target: 0.9}]
  maxReplicaCount: 8
`)
	var r struct {
		Actual struct {
			Minutes float64 `json:"replica_minutes"`
		} `json:"actual"`
	}
	if warn := backtest(one, "chat-prefill", &r); warn != "" || r.Actual.Minutes != 180 {
		t.Errorf("one pool: %g actual replica-minutes, stderr %q; want 180", r.Actual.Minutes, warn)
	}
}

// TestBacktestPairPrometheusURL: backtest --prometheus-url --pd on
// pairHistory's Prometheus, without a config file. One selector split by
// llm-d's role label reads what the config's roles read
// (TestBacktestPairHistory's figures: 3,603 arrivals, the decode pool's
// own 3,600, 180 + 300 actual replica-minutes with each pool's replicas
// query, pd(fixed:1;fixed:2) at 360, 25% saved), with no config:NAME
// row. Each pool's own selector without replicas queries reads the pods
// reporting: one per pool for 120 minutes, 240 in all, so 360 is 50%
// more (-50%). A role label the series lack leaves the pools without
// traffic: the first rebuilt (the decode pool, ReconstructPair) is named
// with its query and the flags that chose it. tune --prometheus-url --pd
// searches the pair's grid on the same history.
func TestBacktestPairPrometheusURL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled history")
	}
	first := time.Now().UTC().Add(-5 * time.Hour).Truncate(time.Hour)
	url := pairHistory(t, first)
	rng := []string{"--start", fmt.Sprint(first.Unix()), "--end", fmt.Sprint(first.Add(2 * time.Hour).Unix()), "--step", "1m"}
	type report struct {
		Requests       float64 `json:"requests"`
		DecodeRequests float64 `json:"decode_requests"`
		Actual         struct {
			Prefill float64 `json:"prefill_replica_minutes"`
			Decode  float64 `json:"decode_replica_minutes"`
		} `json:"actual"`
		Policies []struct {
			Policy  string   `json:"policy"`
			Total   float64  `json:"replica_minutes"`
			Savings *float64 `json:"savings_pct"`
		} `json:"policies"`
	}
	backtest := func(flags ...string) report {
		t.Helper()
		var out, errb bytes.Buffer
		args := append(append([]string{"backtest", "--prometheus-url", url, "--pd", "-q", "--output", "json", "-p", "pd(fixed:1;fixed:2)"}, flags...), rng...)
		if code := run(context.Background(), args, nil, &out, &errb); code != exitOK {
			t.Fatalf("%v: exit %d: %s", flags, code, errb.String())
		}
		var rep report
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatalf("%v\n%s", err, out.String())
		}
		return rep
	}
	check := func(name string, rep report, pre, dec, savings float64) {
		t.Helper()
		if rep.Requests != 3603 || rep.DecodeRequests != 3600 || rep.Actual.Prefill != pre || rep.Actual.Decode != dec {
			t.Errorf("%s: requests %g/%g, actual %+v; want 3603/3600, %g and %g", name, rep.Requests, rep.DecodeRequests, rep.Actual, pre, dec)
		}
		if len(rep.Policies) != 1 || rep.Policies[0].Policy != "pd(fixed:1;fixed:2)" || math.Abs(rep.Policies[0].Total-360) > 1e-9 ||
			rep.Policies[0].Savings == nil || math.Abs(*rep.Policies[0].Savings-savings) > 1e-9 {
			t.Errorf("%s: rows %+v; want pd(fixed:1;fixed:2) alone at 360 replica-minutes, %g%% saved", name, rep.Policies, savings)
		}
	}
	check("--selector split by llm_d_ai_role", backtest("--selector", `{namespace="llm"}`,
		"--prefill-replicas-query", `sum(kube_deployment_spec_replicas{namespace="llm",deployment="chat-prefill"})`,
		"--decode-replicas-query", `sum(kube_deployment_spec_replicas{namespace="llm",deployment="chat-decode"})`), 180, 300, 25)
	check("each pool's selector", backtest("--prefill-selector", `{pod=~"chat-prefill-.*"}`, "--decode-selector", `{pod=~"chat-decode-.*"}`), 120, 120, -50)

	// tune on the same split searches tune --pd's grid, as on the config.
	var out, errb bytes.Buffer
	args := append([]string{"tune", "--prometheus-url", url, "--pd", "--selector", `{namespace="llm"}`, "-q", "--stress", "none", "--finalists", "1", "-o", "json"}, rng...)
	if code := run(context.Background(), args, nil, &out, &errb); code != exitOK {
		t.Fatalf("tune: exit %d: %s", code, errb.String())
	}
	var tr struct {
		Policy string `json:"policy"`
		Rows   []struct {
			Policy string `json:"policy"`
		} `json:"rows"`
	}
	if err := json.Unmarshal(out.Bytes(), &tr); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.HasPrefix(tr.Policy, "recommended(prefill=") || len(tr.Rows) != 20 {
		t.Errorf("tune: winner %q, %d rows; want recommended(prefill=..,decode=..) of 20", tr.Policy, len(tr.Rows))
	}

	out.Reset()
	errb.Reset()
	args = append([]string{"backtest", "--prometheus-url", url, "--pd", "-q", "--selector", `{namespace="llm"}`, "--role-label", "role", "-p", "fixed:1"}, rng...)
	code := run(context.Background(), args, nil, &out, &errb)
	// The history has no role label: neither pool has traffic, and both
	// are named (the decode pool alone was, read first).
	const key = "namespace, pod, engine, dp_rank, tp_rank, pp_rank, model_name, name, model"
	for _, s := range []string{"backtest: --pd, both pools: no request completed in the range: prefill " + `vllm:request_success_total{namespace="llm",role="prefill",server=""} or on (` + key + `) vllm:e2e_request_latency_seconds_count{namespace="llm",role="prefill",server=""}, decode vllm:request_success_total{namespace="llm",role="decode",server=""} or on (` + key + `) vllm:e2e_request_latency_seconds_count{namespace="llm",role="decode",server=""}`, "(check --selector, --role-label role"} {
		if code != exitRuntime || !strings.Contains(errb.String(), s) {
			t.Errorf("--role-label role: exit %d, stderr %q; want exit %d naming %q", code, errb.String(), exitRuntime, s)
		}
	}
}

// TestTunePairHistoryMostlyGaps: a P/D pair's history is refused as one
// pool's is when a part of its split is more than half gaps (tune.
// PartsCovered). pairHistory without the scrapes of minutes 88..109: the
// held-out part, the last 0.25 of 2 h (minutes 90..120), has no sample
// for 20 of its 30 minutes (the last sample before it at 87, the next at
// 110). Before, the pair was tuned on the counters' increase spread over
// the gap, and said holds.
func TestTunePairHistoryMostlyGaps(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled history")
	}
	first := time.Now().UTC().Add(-5 * time.Hour).Truncate(time.Hour)
	url := pairHistorySkip(t, first, func(k int) bool { return k >= 88 && k < 110 })
	rng := []string{"--start", fmt.Sprint(first.Unix()), "--end", fmt.Sprint(first.Add(2 * time.Hour).Unix()), "--step", "1m"}
	var out, errb bytes.Buffer
	args := append([]string{"tune", "--prometheus-url", url, "--pd", "--selector", `{namespace="llm"}`, "-q", "--stress", "none", "--finalists", "1"}, rng...)
	code := run(context.Background(), args, nil, &out, &errb)
	split := first.Add(90 * time.Minute).UTC().Format(time.RFC3339)
	want := "too much of the history is gaps: the held-out part (" + split + ".." + first.Add(2*time.Hour).UTC().Format(time.RFC3339) + ") has no sample for 20m0s of its 30m0s"
	if code != exitRuntime || !strings.Contains(errb.String(), want) {
		t.Errorf("exit %d, stderr %q; want 1 and %q", code, errb.String(), want)
	}
}
