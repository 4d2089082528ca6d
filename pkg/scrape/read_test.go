package scrape

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/infscale/infscale/pkg/modelserver"
)

// An OpenMetrics page as prometheus_client (python) writes it for vLLM:
// counters declared without _total, _created series next to them.
const omPage = `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
# HELP vllm:prompt_tokens Number of prefill tokens processed.
# TYPE vllm:prompt_tokens counter
vllm:prompt_tokens_total{engine="0",model_name="m"} 1200.0
vllm:prompt_tokens_created{engine="0",model_name="m"} 1.7e+09
# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1",model_name="m"} 4.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="1.0",model_name="m"} 9.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="m"} 10.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} 10.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} 3.5
vllm:time_to_first_token_seconds_created{engine="0",model_name="m"} 1.7e+09
# EOF
`

func TestReadOpenMetrics(t *testing.T) {
	for _, ct := range []string{"", "application/openmetrics-text; version=1.0.0; charset=utf-8"} {
		p, err := Read(strings.NewReader(omPage), ct, "om", modelserver.Unknown)
		if err != nil {
			t.Fatalf("content type %q: %v", ct, err)
		}
		checkFloat(t, "running", p.Running, 3)
		checkFloat(t, "prompt tokens", p.PromptTokens, 1200) // _created (1.7e9) never added
		if got := p.Samples("vllm:prompt_tokens_created"); len(got) != 0 {
			t.Errorf("_created series kept: %v", got)
		}
		if !slices.Equal(p.Families, []string{"vllm:num_requests_running", "vllm:prompt_tokens", "vllm:time_to_first_token_seconds"}) {
			t.Errorf("families = %v", p.Families)
		}
		h := p.TTFT
		if h == nil || h.Family != "vllm:time_to_first_token_seconds" || len(h.Buckets) != 3 || h.Count != 10 || h.Sum != 3.5 {
			t.Fatalf("TTFT = %+v", h)
		}
		if h.Buckets[0] != (Bucket{UpperBound: 0.1, Count: 4}) || h.Buckets[1] != (Bucket{UpperBound: 1, Count: 9}) || !math.IsInf(h.Buckets[2].UpperBound, 1) || h.Buckets[2].Count != 10 {
			t.Errorf("buckets = %v, want 0.1:4 1:9 +Inf:10", h.Buckets)
		}
	}
}

func TestReadTTFTSummedOverEngines(t *testing.T) {
	p := readString(t, `# TYPE sglang:time_to_first_token_seconds histogram
sglang:time_to_first_token_seconds_bucket{dp_rank="0",le="0.5"} 1
sglang:time_to_first_token_seconds_bucket{dp_rank="0",le="+Inf"} 2
sglang:time_to_first_token_seconds_bucket{dp_rank="1",le="0.5"} 3
sglang:time_to_first_token_seconds_bucket{dp_rank="1",le="+Inf"} 5
sglang:time_to_first_token_seconds_count{dp_rank="0"} 2
sglang:time_to_first_token_seconds_count{dp_rank="1"} 5
`, modelserver.Unknown)
	// le 0.5: 1 + 3 = 4; +Inf: 2 + 5 = 7; count 2 + 5 = 7; no _sum -> NaN.
	if p.Server != modelserver.SGLang || p.TTFT == nil || len(p.TTFT.Buckets) != 2 ||
		p.TTFT.Buckets[0].Count != 4 || p.TTFT.Buckets[1].Count != 7 || p.TTFT.Count != 7 || !math.IsNaN(p.TTFT.Sum) {
		t.Errorf("server %v TTFT %+v", p.Server, p.TTFT)
	}
}

func TestReadExactFamilyNames(t *testing.T) {
	p := readString(t, `vllm:num_requests_running_created 1.7e+09
vllm:num_requests_running_total 99
vllm:num_requests_runningx 98
vllm_num_requests_running 97
vllm:num_requests_waiting 2
`, modelserver.Unknown)
	// only the exact name counts: running ABSENT, not 97..1.7e9
	checkFloat(t, "running", p.Running, A)
	checkFloat(t, "waiting", p.Waiting, 2)
}

func TestReadAbsentIsNotZero(t *testing.T) {
	for name, tc := range map[string]struct {
		page             string
		running, waiting float64
	}{
		"only NaN":             {"vllm:num_requests_running NaN\nvllm:num_requests_waiting 1\n", A, 1},
		"only Inf":             {"vllm:num_requests_running{engine=\"0\"} +Inf\nvllm:num_requests_running{engine=\"1\"} -Inf\nvllm:num_requests_waiting 0\n", A, 0},
		"NaN next to finite":   {"vllm:num_requests_running{engine=\"0\"} NaN\nvllm:num_requests_running{engine=\"1\"} 2\nvllm:num_requests_waiting 0\n", 2, 0},
		"declared, no samples": {"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_waiting 0\n", A, 0},
		"zero is zero":         {"vllm:num_requests_running 0\nvllm:num_requests_waiting 0\n", 0, 0},
		"scientific":           {"vllm:num_requests_running 1e0\nvllm:num_requests_waiting 2.5E+01\n", 1, 25},
	} {
		t.Run(name, func(t *testing.T) {
			p := readString(t, tc.page, modelserver.Unknown)
			checkFloat(t, "running", p.Running, tc.running)
			checkFloat(t, "waiting", p.Waiting, tc.waiting)
		})
	}
}

func TestReadKVFallbackAndMax(t *testing.T) {
	// new name all NaN: fall back to the old one; max over engines 0.2, 0.7.
	p := readString(t, `vllm:kv_cache_usage_perc{engine="0"} NaN
vllm:gpu_cache_usage_perc{engine="0"} 0.2
vllm:gpu_cache_usage_perc{engine="1"} 0.7
`, modelserver.Unknown)
	checkFloat(t, "kv", p.KV, 0.7)
	if p.Chosen.KV != "vllm:gpu_cache_usage_perc" || p.Engines != 2 {
		t.Errorf("kv from %q engines %d", p.Chosen.KV, p.Engines)
	}
}

func TestReadNoProfile(t *testing.T) {
	_, err := Read(strings.NewReader("# TYPE go_goroutines gauge\ngo_goroutines 12\nup 1\n"), "", "node.prom", modelserver.Unknown)
	var npe *NoProfileError
	if !errors.As(err, &npe) || !errors.Is(err, ErrNoProfile) || errors.Is(err, ErrInvalidPage) {
		t.Fatalf("err = %v, want *NoProfileError", err)
	}
	msg := err.Error()
	for _, want := range []string{"node.prom", "vllm:num_requests_running", "llamacpp:requests_deferred", "sglang:num_queue_reqs", "tgi_queue_size", "go_goroutines, up"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error %q lacks %q", msg, want)
		}
	}
	// With a server given, the same page reads as all ABSENT.
	p := readString(t, "go_goroutines 12\n", modelserver.LlamaCpp)
	if p.Server != modelserver.LlamaCpp || p.Reporting() || !math.IsNaN(p.Running) {
		t.Errorf("forced: %+v", p)
	}
	// An empty page, or one of comments, has no profile either; the error
	// says so in one line instead of listing every server's families.
	for page, want := range map[string]string{
		"":                   "empty: no known server profile: the page is empty (0 bytes): want a model server's /metrics text",
		"\n \n":              "empty: no known server profile: the page is empty (3 bytes, white space only)",
		"# just a comment\n": "empty: no known server profile: the page has no metric families (comments only)",
	} {
		_, err := Read(strings.NewReader(page), "", "empty", modelserver.Unknown)
		if !errors.Is(err, ErrNoProfile) || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
			t.Errorf("page %q: %v; want ErrNoProfile, one line, %q", page, err, want)
		}
	}
}

func TestReadInvalid(t *testing.T) {
	for name, tc := range map[string]struct {
		page, contentType string
		line              int
		msg               string
	}{
		"bad value on line 3":                {"# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 1\nvllm:num_requests_waiting abc\n", "", 3, `sample value "abc" is not a number in "vllm:num_requests_waiting abc": a sample line is NAME{LABELS} VALUE`},
		"prose (a README)":                   {"# infscale\n\nAn autoscaler for LLM\n", "", 3, `sample value "autoscaler" is not a number in "An autoscaler"`},
		"signed NaN (llama.cpp, early 2025)": {"llamacpp:requests_processing 0\nllamacpp:n_busy_slots_per_decode -nan\n", "", 2, `sample value "-nan" is C's printf of a NaN in "llamacpp:n_busy_slots_per_decode -nan"`},
		"value beyond float64":               {"vllm:num_requests_running 1e999\n", "", 1, `sample value "1e999" is out of a float64's range in "vllm:num_requests_running 1e999"`},
		"timestamp beyond int64":             {"vllm:num_requests_running 1 99999999999999999999\n", "", 1, `timestamp "99999999999999999999" is not an int64 of milliseconds`},
		"unterminated label line 2":          {"vllm:num_requests_running 1\nvllm:num_requests_waiting{a=\"x} 1\nvllm:num_requests_running 2\n", "", 2, ""},
		"after blank and comments":           {"vllm:num_requests_running 1\n\n# a comment\n\nvllm:num_requests_waiting 1 2 3 4\n", "", 5, ""},
		"JSON (trtllm-serve /metrics)":       {`[{"gpuMemUsage": 1}]`, "", 1, "JSON"},
		"JSON object (an API's error)":       {`{"detail": "Not Found"}`, "", 1, "body is JSON"},
		"empty JSON object":                  {"{}\n", "", 1, "body is JSON"},
		// a proxy's plain-text answer with status 200: the parser's own
		// message was all ("expected value after metric, got \"\\n\"").
		"plain-text error page": {"Unauthorized\n", "", 1, `expected value after metric, got "\n" ("INVALID") while parsing: "Unauthorized\n" (nothing before it reads as metrics; the body starts "Unauthorized": is the URL a model server's /metrics, not an error or login page?)`},
		"404 text":              {"\n404 page not found\n", "", 2, `(nothing before it reads as metrics; the body starts "404 page not found"`},
		"HTML":                  {"<html><body>404</body></html>", "", 1, "HTML"},
		// the line the body starts on, as "404 text": it said line 1
		"HTML after blank lines":  {"\n\n  <html><body>404</body></html>\n", "", 3, "HTML"},
		"JSON after a blank line": {"\r\n{\"detail\": \"Not Found\"}", "", 2, "body is JSON"},
		// the header's fault, no line of the body's (it said line 1)
		"unsupported content type":   {"vllm:num_requests_running 1\n", "application/json", 0, "Content-Type"},
		"protobuf content type":      {"x", "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited", 0, "the protobuf format, which infscale does not read (it asks for text)"},
		"OpenMetrics without # EOF":  {"vllm:num_requests_running 1\nvllm:num_requests_waiting 1\n", "application/openmetrics-text; version=1.0.0", 2, `data does not end with # EOF (the Content-Type "application/openmetrics-text; version=1.0.0" says OpenMetrics, whose pages end with a # EOF line: the page was cut short, or is the text format sent as OpenMetrics)`},
		"OpenMetrics data after EOF": {"vllm:num_requests_running 1\n# EOF\nvllm:num_requests_waiting 1\n", "", 3, "EOF"},
		// OpenMetrics syntax on a page read as the text format (no # EOF:
		// an excerpt, a cut page, or OpenMetrics sent as text/plain): an
		// exemplar was "nothing before it reads as metrics ... not an error
		// or login page?", a float timestamp (seconds) "not an int64".
		"exemplar without # EOF":        {"vllm:num_requests_running{engine=\"0\"} 3 # {trace_id=\"a\"} 1\n", "", 1, "an exemplar (` # {...}` after the value), which only OpenMetrics allows"},
		"exemplar on line 2":            {"vllm:num_requests_running 1\nvllm:prompt_tokens_total 9 # {trace_id=\"a\"} 1 1.7e9\n", "text/plain; version=0.0.4", 2, "only OpenMetrics allows"},
		"OpenMetrics seconds timestamp": {"vllm:num_requests_running 1 1700000000.5\n", "", 1, "in seconds as OpenMetrics writes them"},
	} {
		t.Run(name, func(t *testing.T) {
			p, err := Read(strings.NewReader(tc.page), tc.contentType, "page.prom", modelserver.VLLM)
			var pe *PageError
			if p != nil || !errors.As(err, &pe) || !errors.Is(err, ErrInvalidPage) {
				t.Fatalf("page %v err %v, want *PageError and no page", p, err)
			}
			if pe.Line != tc.line || pe.Source != "page.prom" || !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("err = %q (line %d), want line %d mentioning %q", err, pe.Line, tc.line, tc.msg)
			}
		})
	}
}

func TestReadTooLarge(t *testing.T) {
	r := strings.NewReader(strings.Repeat("#\n", MaxPageBytes/2+1))
	if _, err := Read(r, "", "big", modelserver.VLLM); !errors.Is(err, ErrInvalidPage) {
		t.Errorf("err = %v, want ErrInvalidPage", err)
	}
}

func TestDetectOrder(t *testing.T) {
	for page, want := range map[string]modelserver.Server{
		"tgi_queue_size 1\nvllm:num_requests_running 2\n":     modelserver.VLLM, // queue families, vLLM first
		"tgi_queue_size 1\nvllm:prompt_tokens_total 2\n":      modelserver.TGI,  // queue families beat other families
		"llamacpp:prompt_tokens_total 5\n":                    modelserver.LlamaCpp,
		"sglang_num_running_reqs{tp_rank=\"0\"} 1\n":          modelserver.SGLang,
		"pytrtllm:request_success_total 1\n":                  modelserver.TRTLLM,
		"nv_inference_pending_request_count{model=\"a\"} 0\n": modelserver.Triton,
		"# TYPE sglang:whatever gauge\n":                      modelserver.SGLang, // prefix only
	} {
		p := readString(t, page, modelserver.Unknown)
		if p.Server != want {
			t.Errorf("%q: server %v, want %v", page, p.Server, want)
		}
	}
}

// endless is a page that never ends (a server streaming series for ever),
// counting what was read of it.
type endless struct{ n int64 }

func (e *endless) Read(p []byte) (int, error) {
	const line = "vllm:num_requests_running{x=\"0123456789\"} 1\n"
	for i := range p {
		p[i] = line[(e.n+int64(i))%int64(len(line))]
	}
	e.n += int64(len(p))
	return len(p), nil
}

// Issue 13 item 10: the cap is 4 MiB, what real servers need (the largest
// reference page is 8.9 KB), and no more than the cap (plus one read
// buffer) is read of a larger page: memory does not grow with the page.
func TestReadCapBoundsTheRead(t *testing.T) {
	if MaxPageBytes != 4<<20 {
		t.Errorf("MaxPageBytes %d, want 4 MiB", MaxPageBytes)
	}
	e := &endless{}
	if _, err := Read(e, "", "endless", modelserver.VLLM); !errors.Is(err, ErrInvalidPage) || !strings.Contains(err.Error(), "larger than 4194304 bytes, the most infscale reads of one replica's page: is it one model server's /metrics") {
		t.Errorf("err = %v, want the cap named", err)
	}
	if e.n > MaxPageBytes+1<<20 {
		t.Errorf("read %d bytes of an endless page, want at most the cap and a buffer", e.n)
	}
}

// A page whose first line quotes its metric name (the exposition formats'
// UTF-8 names, which Prometheus 3 reads) is a page, not JSON: it was
// refused as "body is JSON".
func TestReadQuotedNames(t *testing.T) {
	p := readString(t, "{\"vllm:num_requests_running\",engine=\"0\"} 3\n{ \"vllm:num_requests_running\" , engine=\"1\"} 4\n{\"vllm:num_requests_waiting\",engine=\"0\"} 2\n", modelserver.Unknown)
	// running 3 + 4 over the two engines, waiting 2.
	checkFloat(t, "running", p.Running, 7)
	checkFloat(t, "waiting", p.Waiting, 2)
	if p.Engines != 2 {
		t.Errorf("engines %d, want 2", p.Engines)
	}
}

// A page of nothing but a client library's own families (process_*,
// python_*, http_* of prometheus-fastapi-instrumentator) is a model
// server that exports no load family: vLLM 0.5.4's /metrics (vllm issue
// #7188: "The only metrics that are exposed are python-specific metrics").
// The error listed every server's families and the page's, not that.
func TestReadRuntimeFamiliesOnly(t *testing.T) {
	page := `# HELP python_gc_objects_collected_total Objects collected during gc
# TYPE python_gc_objects_collected_total counter
python_gc_objects_collected_total{generation="0"} 9178.0
python_gc_objects_collected_total{generation="1"} 4566.0
python_gc_objects_collected_total{generation="2"} 1294.0
# HELP python_info Python platform information
# TYPE python_info gauge
python_info{implementation="CPython",major="3",minor="10",patchlevel="14",version="3.10.14"} 1.0
# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.
# TYPE process_cpu_seconds_total counter
process_cpu_seconds_total 28.15
# HELP http_requests_total Total number of requests by method, status and handler.
# TYPE http_requests_total counter
http_requests_total{handler="/metrics",method="GET",status="2xx"} 12.0
`
	_, err := Read(strings.NewReader(page), "", "py.prom", modelserver.Unknown)
	want := "the page has only the process and runtime families a client library exports (python_*, process_*, http_*), none of a model server: is its metrics logger on? (vLLM 0.5.4 exported none, vllm issue #7188; vLLM with --disable-log-stats exports none)"
	if !errors.Is(err, ErrNoProfile) || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v\nwant ErrNoProfile saying %q", err, want)
	}
	// A page with another family too (an exporter infscale does not
	// know) gets the list of families looked for, not the hint.
	_, err = Read(strings.NewReader(page+"node_load1 0.5\n"), "", "node.prom", modelserver.Unknown)
	if !errors.Is(err, ErrNoProfile) || strings.Contains(err.Error(), "client library") {
		t.Errorf("err = %v, want ErrNoProfile without the hint", err)
	}
}
