// Package epptest (a test harness) writes /metrics pages as an llm-d Endpoint Picker (EPP)
// serves them, for tests and stand-ins: the families, types, label names and
// help texts of llm-d/llm-d-router at commit
// ebab687927f5331c1b39defcb579a07951bce56c (pkg/epp/metrics/metrics.go for
// the deprecated inference_pool_, inference_objective_ and
// inference_extension_ families, llm_d_router_metrics.go for their
// llm_d_epp_ twins, collectors/inference_pool.go for the per-endpoint queue,
// requestcontrol/dataproducer/inflightload/metrics.go for in-flight load).
// Like the router, it writes every family that has a twin under both
// names (dual emission), so a reader that added the two would count
// everything twice.
package epptest

import (
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
)

// Flow is one flow-control queue's held requests (one fairness id and
// priority).
type Flow struct {
	FairnessID string
	Priority   string
	Held       float64
}

// Hist is a classic histogram: cumulative counts by upper bound (the +Inf
// bucket is Count), its sum and count.
type Hist struct {
	Bounds []float64
	Counts []float64
	Sum    float64
	Count  float64
}

// State is what the page reports. Zero-valued optional parts are left out.
type State struct {
	// Pool is the InferencePool name; Model the served model.
	Pool, Model string
	// Endpoints are the endpoints the EPP knows, by name, with their
	// waiting requests (per_endpoint_queue_size); Fresh says which have
	// fresh metrics (they make ready_endpoints and the averages), with
	// their running requests and KV usage.
	Endpoints []Endpoint
	// RequestRunning is requests in flight through the EPP, by fairness id.
	RequestRunning map[string]float64
	// Flows are the flow-control queues (flowControl feature gate); nil:
	// flow control off (no flow-control families); empty: on, no request
	// held since the EPP started or its idle flows were garbage-collected
	// (no queue series: the router writes a flow's from its first request
	// and prunes it with the flow; the saturation, from its start).
	Flows []Flow
	// Saturation by stage (prefill, decode, effective); Stale is
	// flow_control_stale_endpoints. Written only with Flows != nil.
	Saturation map[string]float64
	Stale      float64
	// Requests is request_total (one series); InputTokens and OutputTokens
	// the token histograms' sums (count = Requests); TTFT and ITL histograms.
	Requests, InputTokens, OutputTokens float64
	TTFT, ITL                           *Hist
	// InflightTokens by endpoint (the in-flight load producer); nil: not
	// configured.
	InflightTokens map[string]float64
	// NoTwins leaves the deprecated twins out (a router build after their
	// removal); OnlyTwins leaves the llm_d_epp_ names out (an older build).
	NoTwins, OnlyTwins bool
}

// Endpoint is one model-server endpoint as the EPP sees it.
type Endpoint struct {
	Name             string
	Fresh            bool
	Running, Waiting float64
	KV               float64
}

// round2 is the router's rounding of the pool averages (datalayer/logger).
func round2(x float64) float64 {
	return float64(int64(x*100+0.5)) / 100
}

// Page renders s in the Prometheus text format.
func Page(s State) string {
	var b strings.Builder
	gauge := func(cur, dep, help string, series ...[2]string) {
		for i, name := range []string{cur, dep} {
			if name == "" || (i == 0 && s.OnlyTwins) || (i == 1 && s.NoTwins) {
				continue
			}
			h := help
			if i == 1 {
				h = "[Deprecated: Use " + cur + "] " + help
			}
			fmt.Fprintf(&b, "# HELP %s [ALPHA] %s\n# TYPE %s gauge\n", name, h, name)
			for _, sr := range series {
				fmt.Fprintf(&b, "%s%s %s\n", name, sr[0], sr[1])
			}
		}
	}
	pool := fmt.Sprintf(`{name=%q}`, s.Pool)
	var fresh []Endpoint
	for _, e := range s.Endpoints {
		if e.Fresh {
			fresh = append(fresh, e)
		}
	}
	gauge("llm_d_epp_ready_endpoints", "inference_pool_ready_pods", "The number of ready endpoints in the inference server pool.", [2]string{pool, num(float64(len(fresh)))})
	if len(fresh) > 0 { // the router leaves the averages unset (at their last value) with no fresh pod
		var run, wait, kv float64
		for _, e := range fresh {
			run, wait, kv = run+e.Running, wait+e.Waiting, kv+e.KV
		}
		n := float64(len(fresh))
		gauge("llm_d_epp_average_kv_cache_utilization", "inference_pool_average_kv_cache_utilization", "The average kv cache utilization for an inference server pool.", [2]string{pool, num(round2(kv / n))})
		gauge("llm_d_epp_average_queue_size", "inference_pool_average_queue_size", "The average number of requests pending in the model server queue.", [2]string{pool, num(round2(wait / n))})
		gauge("llm_d_epp_average_running_requests", "inference_pool_average_running_requests", "The average number of running requests across model servers in the pool.", [2]string{pool, num(round2(run / n))})
	}
	if len(s.Endpoints) > 0 {
		var cur, dep [][2]string
		for _, e := range s.Endpoints {
			cur = append(cur, [2]string{fmt.Sprintf(`{model_server_endpoint=%q,name=%q}`, e.Name, s.Pool), num(e.Waiting)})
			dep = append(dep, [2]string{fmt.Sprintf(`{model_server_pod=%q,name=%q}`, e.Name, s.Pool), num(e.Waiting)})
		}
		if !s.OnlyTwins {
			gaugeSeries(&b, "llm_d_epp_per_endpoint_queue_size", "The total number of requests pending in the model server queue for each underlying endpoint.", cur)
		}
		if !s.NoTwins {
			gaugeSeries(&b, "inference_pool_per_pod_queue_size", "The total number of requests pending in the model server queue for each underlying pod.", dep)
		}
	}
	if len(s.RequestRunning) > 0 {
		var cur [][2]string
		total := 0.0
		for _, id := range slices.Sorted(maps.Keys(s.RequestRunning)) {
			cur = append(cur, [2]string{fmt.Sprintf(`{fairness_id=%q,model_name=%q,priority="0",target_model_name=%q}`, id, s.Model, s.Model), num(s.RequestRunning[id])})
			total += s.RequestRunning[id]
		}
		if !s.OnlyTwins {
			gaugeSeries(&b, "llm_d_epp_request_running", "Current number of active running requests.", cur)
		}
		if !s.NoTwins {
			gaugeSeries(&b, "inference_objective_running_requests", "[Deprecated: Use llm_d_epp_request_running] Inference objective number of running requests in each model.", [][2]string{{fmt.Sprintf(`{model_name=%q}`, s.Model), num(total)}})
		}
	}
	if s.Flows != nil {
		var q [][2]string
		for _, f := range s.Flows {
			q = append(q, [2]string{fmt.Sprintf(`{fairness_id=%q,inference_pool=%q,model_name=%q,priority=%q,target_model_name=%q}`, f.FairnessID, s.Pool, s.Model, f.Priority, s.Model), num(f.Held)})
		}
		if len(q) > 0 { // a gauge vector without series: no line at all (client_golang)
			gauge("llm_d_epp_flow_control_queue_size", "inference_extension_flow_control_queue_size", "Current number of requests actively held in the Flow Control queue.", q...)
		}
		var sat [][2]string
		for _, st := range slices.Sorted(maps.Keys(s.Saturation)) {
			sat = append(sat, [2]string{fmt.Sprintf(`{inference_pool=%q,stage=%q}`, s.Pool, st), num(s.Saturation[st])})
		}
		gauge("llm_d_epp_flow_control_pool_saturation", "inference_extension_flow_control_pool_saturation", "Pool saturation signal gating Flow Control dispatch. An empty pool reads as 1.0.", sat...)
		if !s.OnlyTwins {
			gaugeSeries(&b, "llm_d_epp_flow_control_stale_endpoints", "Number of candidate endpoints whose metrics are missing or older than the staleness threshold.", [][2]string{{`{detector="utilization-detector"}`, num(s.Stale)}})
		}
	}
	if len(s.InflightTokens) > 0 && !s.OnlyTwins {
		var t [][2]string
		for _, ep := range slices.Sorted(maps.Keys(s.InflightTokens)) {
			t = append(t, [2]string{fmt.Sprintf(`{endpoint_name=%q,fairness_id="",namespace="llm",priority="0",producer_name="inflight-load-producer"}`, ep), num(s.InflightTokens[ep])})
		}
		gaugeSeries(&b, "llm_d_epp_inflight_tokens", "Current number of in-flight tokens per endpoint.", t)
	}
	if s.Requests > 0 || s.InputTokens > 0 {
		lbl := fmt.Sprintf(`{fairness_id="",model_name=%q,priority="0",target_model_name=%q}`, s.Model, s.Model)
		dlbl := fmt.Sprintf(`{model_name=%q,priority="0",target_model_name=%q}`, s.Model, s.Model)
		hlbl := fmt.Sprintf(`fairness_id="",model_name=%q,priority="0",target_model_name=%q`, s.Model, s.Model)
		dhlbl := fmt.Sprintf(`model_name=%q,target_model_name=%q`, s.Model, s.Model)
		if !s.OnlyTwins {
			fmt.Fprintf(&b, "# HELP llm_d_epp_request_total [ALPHA] Counter of requests.\n# TYPE llm_d_epp_request_total counter\nllm_d_epp_request_total%s %s\n", lbl, num(s.Requests))
			histogram(&b, "llm_d_epp_request_input_tokens", hlbl, &Hist{Bounds: []float64{1024}, Counts: []float64{s.Requests}, Sum: s.InputTokens, Count: s.Requests})
			histogram(&b, "llm_d_epp_request_output_tokens", hlbl, &Hist{Bounds: []float64{1024}, Counts: []float64{s.Requests}, Sum: s.OutputTokens, Count: s.Requests})
			if s.TTFT != nil {
				histogram(&b, "llm_d_epp_request_ttft_seconds", hlbl+`,streaming="true"`, s.TTFT)
			}
			if s.ITL != nil {
				histogram(&b, "llm_d_epp_request_streaming_itl_seconds", hlbl, s.ITL)
			}
		}
		if !s.NoTwins {
			fmt.Fprintf(&b, "# HELP inference_objective_request_total [ALPHA] [Deprecated: Use llm_d_epp_request_total] Counter of inference objective requests.\n# TYPE inference_objective_request_total counter\ninference_objective_request_total%s %s\n", dlbl, num(s.Requests))
			histogram(&b, "inference_objective_input_tokens", dhlbl, &Hist{Bounds: []float64{1024}, Counts: []float64{s.Requests}, Sum: s.InputTokens, Count: s.Requests})
			histogram(&b, "inference_objective_output_tokens", dhlbl, &Hist{Bounds: []float64{1024}, Counts: []float64{s.Requests}, Sum: s.OutputTokens, Count: s.Requests})
		}
	}
	return b.String()
}

func gaugeSeries(b *strings.Builder, name, help string, series [][2]string) {
	fmt.Fprintf(b, "# HELP %s [ALPHA] %s\n# TYPE %s gauge\n", name, help, name)
	for _, sr := range series {
		fmt.Fprintf(b, "%s%s %s\n", name, sr[0], sr[1])
	}
}

func histogram(b *strings.Builder, name, labels string, h *Hist) {
	fmt.Fprintf(b, "# HELP %s [ALPHA] histogram\n# TYPE %s histogram\n", name, name)
	for i, ub := range h.Bounds {
		fmt.Fprintf(b, "%s_bucket{%s,le=%q} %s\n", name, labels, num(ub), num(h.Counts[i]))
	}
	fmt.Fprintf(b, "%s_bucket{%s,le=\"+Inf\"} %s\n%s_sum{%s} %s\n%s_count{%s} %s\n", name, labels, num(h.Count), name, labels, num(h.Sum), name, labels, num(h.Count))
}

func num(v float64) string { return fmt.Sprintf("%g", v) }

// Server serves a State's page on loopback; Set changes it.
type Server struct {
	*httptest.Server
	mu sync.Mutex
	s  State
}

// Serve starts a Server for s; Close it when done.
func Serve(s State) *Server {
	srv := &Server{s: s}
	srv.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		srv.mu.Lock()
		page := Page(srv.s)
		srv.mu.Unlock()
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, page)
	}))
	return srv
}

// Set replaces the served state (f edits a copy).
func (s *Server) Set(f func(*State)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.s)
}
