package scrape

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/infscale/infscale/internal/sourcekey"
	"github.com/infscale/infscale/pkg/modelserver"
)

// Pages that parse with Prometheus's text parser but must not be read:
// each would otherwise give a number (a decision on garbage). Every one is
// *PageError naming the line of the problem.
func TestReadRefusesGarbageValues(t *testing.T) {
	for name, tc := range map[string]struct {
		page string
		line int
		want string // in the message
	}{
		// the textparse lexer treats NUL as end of input: without the check
		// "waiting 5" on line 3 was silently dropped (waiting ABSENT).
		"NUL stops the parser": {"vllm:num_requests_running 1\n\x00\nvllm:num_requests_waiting 5\n", 2, "NUL byte"},
		"NUL mid-line":         {"vllm:num_requests_running 1\nvllm:num_requests_waiting 5\x00 junk\n", 2, "NUL byte"},
		// a saved page still gzipped (1f 8b 08 ..., then binary): it was
		// "NUL byte: binary data", not what to do.
		"gzip": {"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03+K\xca\xc9\xb1\x02\x00", 1, "gzip-compressed data, not a text page: decompress it first (gunzip it, or save a live page with curl --compressed)"},
		// "35" cut to "3" by a truncated paste or file: the text format ends
		// every line with \n, so a page whose last line lacks it is cut.
		"truncated last line": {"vllm:num_requests_running 2\nvllm:num_requests_waiting 3", 2, "truncated"},
		// cut mid-line where the rest does not parse: the parser's message
		// alone ("expected equal, got \"\\n\"") did not say the page was
		// cut, and a page cut inside its first line was taken for a
		// proxy's error page.
		"cut inside labels": {"vllm:num_requests_running{engine=\"0\"} 3\nvllm:num_requests_waiting{engine=\"0\",mod", 2, "the last line has no newline: the page looks cut short mid-line"},
		"cut inside # TYPE": {"vllm:num_requests_running{engine=\"0\"} 3\n# TYPE vllm:num_requests_waiting gau", 2, "cut short mid-line"},
		"cut inside a name": {"vllm:num_requests_wa", 1, "cut short mid-line"},
		// the same series twice: summing gave running 2 + 3 = 5 for one engine.
		"duplicate series": {"vllm:num_requests_running{engine=\"0\"} 2\nvllm:num_requests_waiting 0\nvllm:num_requests_running{engine=\"0\"} 3\n", 3, "appears twice"},
		// with timestamps it is still one series: 1 + 5 = 6 was read.
		"duplicate with timestamps": {"vllm:num_requests_running 1 1700000000000\nvllm:num_requests_running 5 1700000001000\n", 2, "appears twice"},
		"duplicate bucket":          {"# TYPE vllm:time_to_first_token_seconds histogram\nvllm:time_to_first_token_seconds_bucket{le=\"1\"} 1\nvllm:time_to_first_token_seconds_bucket{le=\"1\"} 2\n", 3, "appears twice"},
		"duplicate label name":      {"vllm:num_requests_running 1\nvllm:num_requests_waiting{a=\"1\",a=\"2\"} 1\n", 2, `label "a" appears twice`},
		// a gateway's page of two workers (the SGLang Model Gateway's
		// worker_addr): read as one replica it carried both's load, 2 workers
		// counted as 1 at twice the per-replica queue; line 2 is the second.
		// The page is well formed: it says what it is not, not "invalid".
		"two workers": {"sglang_num_running_reqs{worker_addr=\"grpc://a:8001\"} 3\nsglang_num_running_reqs{worker_addr=\"grpc://b:8001\"} 5\n", 2, `bad.prom:2: not one replica's metrics page: the page covers several model servers (worker_addr "grpc://a:8001" and "grpc://b:8001")`},
		// the vLLM production-stack router's page: one series per engine
		// behind it (label server); read as one replica it was running
		// 7 + 5 = 12 on one replica, the fleet's load.
		"vLLM router": {"# HELP vllm:num_requests_running Number of running requests\n# TYPE vllm:num_requests_running gauge\n" +
			"vllm:num_requests_running{server=\"http://10.0.0.7:8000\"} 7.0\nvllm:num_requests_running{server=\"http://10.0.0.8:8000\"} 5.0\n", 4,
			`bad.prom:4: not one replica's metrics page: the page covers several model servers (server "http://10.0.0.7:8000" and "http://10.0.0.8:8000"): a router's page, such as the vLLM production-stack router's`},
		"negative waiting": {"vllm:num_requests_running 1\nvllm:num_requests_waiting{engine=\"0\"} 0\nvllm:num_requests_waiting{engine=\"1\"} -3\n", 3, "not a waiting-request count (allowed: 0 to 1e+09)"},
		"negative running": {"sglang:num_running_reqs -1\n", 1, "running-request count"},
		"KV above 1":       {"vllm:num_requests_running 1\nvllm:kv_cache_usage_perc 1.7\n", 2, "not a KV-cache usage fraction (allowed: 0 to 1)"},
		"KV below 0":       {"vllm:kv_cache_usage_perc -0.1\n", 1, "KV-cache usage"},
		"negative counter": {"vllm:num_requests_running 1\nvllm:prompt_tokens_total -5\n", 2, "token counter"},
		"negative cpu":     {"vllm:num_requests_running 1\nprocess_cpu_seconds_total -1\n", 2, "CPU-seconds"},
		// 1.7e308 + 1.7e308 overflows to +Inf, which read as ABSENT: garbage, not unknown.
		// (A request count that large is refused per series: MaxRequests.)
		"sum overflows": {"vllm:num_requests_running 1\nvllm:prompt_tokens_total{engine=\"0\"} 1.7e308\nvllm:prompt_tokens_total{engine=\"1\"} 1.7e308\n", 0, "overflows"},
		// the chosen TTFT histogram: negative, or decreasing within one
		// series (le 1 below le 0.5); another engine's series is separate.
		"negative bucket": {"vllm:num_requests_running 1\n# TYPE vllm:time_to_first_token_seconds histogram\nvllm:time_to_first_token_seconds_bucket{le=\"+Inf\"} -2\n", 3, "histogram count"},
		"decreasing buckets": {"vllm:num_requests_running 1\n# TYPE vllm:time_to_first_token_seconds histogram\n" +
			"vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.5\"} 50\nvllm:time_to_first_token_seconds_bucket{engine=\"1\",le=\"0.5\"} 1\n" +
			"vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"1\"} 25\nvllm:time_to_first_token_seconds_bucket{engine=\"1\",le=\"1\"} 2\n", 5, "cumulative"},
		// the queue-time and ITL histograms are read into quantiles too
		// (queuewait scales on the first): a negative le=1 count gave a
		// queue-time median of 1 s, buckets 50 then 10 an ITL median of 0.06 s.
		"negative queue-time bucket": {"vllm:num_requests_running 1\n# TYPE vllm:request_queue_time_seconds histogram\n" +
			"vllm:request_queue_time_seconds_bucket{le=\"1\"} -5\nvllm:request_queue_time_seconds_bucket{le=\"+Inf\"} 3\n", 3, "histogram count"},
		"decreasing ITL buckets": {"vllm:num_requests_running 1\n# TYPE vllm:inter_token_latency_seconds histogram\n" +
			"vllm:inter_token_latency_seconds_bucket{le=\"0.1\"} 50\nvllm:inter_token_latency_seconds_bucket{le=\"1\"} 10\nvllm:inter_token_latency_seconds_bucket{le=\"+Inf\"} 60\n", 4, "cumulative"},
		"negative SGLang queue-time sum": {"sglang:num_running_reqs 1\n# TYPE sglang:queue_time_seconds histogram\n" +
			"sglang:queue_time_seconds_bucket{le=\"+Inf\"} 3\nsglang:queue_time_seconds_sum -0.5\n", 4, "histogram count or sum"},
		// capacity is shown as max_running: -7 was printed as read.
		"negative capacity": {"sglang:num_running_reqs 3\nsglang:max_running_requests -7\n", 2, "not a batch capacity in requests (allowed: 0 to 1e+09)"},
		// an llm-d EPP's page: its ready endpoints are serve's current
		// replicas and multiply the averages. -2 read as current -2,
		// running 3 x -2 = -6; 1e300 as current -9223372036854775808 (Go's
		// int of a float out of range) and running 3e300.
		"EPP negative ready": {"llm_d_epp_ready_endpoints{name=\"p\"} -2\nllm_d_epp_average_running_requests{name=\"p\"} 3\n", 1, "not a count of ready endpoints (allowed: 0 to 150000)"},
		"EPP absurd ready":   {"llm_d_epp_average_running_requests{name=\"p\"} 3\ninference_pool_ready_pods{name=\"p\"} 0\nllm_d_epp_ready_endpoints{name=\"p\"} 1e300\n", 3, "ready endpoints"},
		// the flow-control queue is serve's held count (zero.flow_control):
		// 5e20 held was read.
		"EPP absurd flow queue": {"llm_d_epp_ready_endpoints{name=\"p\"} 0\nllm_d_epp_flow_control_queue_size{fairness_id=\"a\",priority=\"0\"} 5e20\n", 2, "not a count of held requests (allowed: -1e+09 to 1e+09)"},
		// parse showed effective saturation 0 for -3 (the max with 0).
		"EPP negative saturation": {"llm_d_epp_ready_endpoints{name=\"p\"} 2\nllm_d_epp_flow_control_pool_saturation{stage=\"decode\"} -3\n", 2, "not a saturation"},
		// one bound twice in a series of an undeclared histogram (le "1" and
		// "1.0"; Prometheus 3 reads a declared one's le as a number and calls
		// it a duplicate): its counts were added, 3 + 3 = 6 at le 1 above
		// the 3 at +Inf.
		"one bound twice": {"vllm:num_requests_running 1\nvllm:time_to_first_token_seconds_bucket{le=\"1\"} 3\n" +
			"vllm:time_to_first_token_seconds_bucket{le=\"+Inf\"} 3\nvllm:time_to_first_token_seconds_bucket{le=\"1.0\"} 3\n", 4, `le="1.0"} repeats the bound of`},
		// parse errors get a hint when the cause is the line ending or a BOM
		// and say what to do: the hint named the cause only.
		"CRLF": {"vllm:num_requests_running 1\r\nvllm:num_requests_waiting 2\r\n", 1, "CRLF line endings; the format ends lines with \\n only: convert them (dos2unix FILE), or fix the server or proxy that sent them"},
		"BOM":  {"\ufeffvllm:num_requests_running 1\n", 1, "byte-order mark, which the format does not allow: save the page without it"},
	} {
		t.Run(name, func(t *testing.T) {
			p, err := Read(strings.NewReader(tc.page), "", "bad.prom", modelserver.Unknown)
			var pe *PageError
			if !errors.As(err, &pe) || !errors.Is(err, ErrInvalidPage) || p != nil {
				t.Fatalf("Read = %+v, %v; want *PageError", p, err)
			}
			if pe.Line != tc.line || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("line %d, %q; want line %d and %q", pe.Line, err, tc.line, tc.want)
			}
		})
	}
}

// The checks do not refuse what real servers export: 0 and 1 for KV, the
// same labels under different names, the same name under different labels,
// OpenMetrics without a newline after # EOF (its grammar makes it optional),
// and non-finite samples (ABSENT, not garbage).
func TestReadSaneEdges(t *testing.T) {
	p := readString(t, `vllm:num_requests_running{engine="0"} 0
vllm:num_requests_running{engine="1"} 2
vllm:num_requests_waiting{engine="0"} 0
vllm:num_requests_waiting{engine="1"} NaN
vllm:kv_cache_usage_perc{engine="0"} 1
vllm:kv_cache_usage_perc{engine="1"} -Inf
`, modelserver.Unknown)
	// running 0 + 2; waiting 0 (NaN ignored); KV max(1) with -Inf ignored.
	checkFloat(t, "running", p.Running, 2)
	checkFloat(t, "waiting", p.Waiting, 0)
	checkFloat(t, "kv", p.KV, 1)

	om, err := Read(strings.NewReader("vllm:num_requests_running 4\n# EOF"), "", "om", modelserver.Unknown)
	if err != nil {
		t.Fatal(err)
	}
	checkFloat(t, "openmetrics running", om.Running, 4)

	// two engines with different bucket layouts, each cumulative: the page
	// is sane, and the engines are merged (histogram.Merge), each counted at
	// a bound it lacks by its count below: 0.1: 5 + 0, 0.5: 5 + 1, +Inf:
	// 5 + 1: p90 (rank 5.4 of 6) in (0.1, 0.5] is 0.1 + 0.4 × 0.4/1 = 0.26 s.
	// The sum by le (0.1: 5, 0.5: 1, +Inf: 6) went down; read as PromQL
	// reads it (0.5 raised to 5) its p90 fell in +Inf: 0.5 s.
	p = readString(t, `vllm:num_requests_running 1
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.1"} 5
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf"} 5
vllm:time_to_first_token_seconds_bucket{engine="1",le="0.5"} 1
vllm:time_to_first_token_seconds_bucket{engine="1",le="+Inf"} 1
`, modelserver.Unknown)
	if p.TTFT == nil || len(p.TTFT.Buckets) != 3 || p.TTFT.Buckets[0].Count != 5 || p.TTFT.Buckets[1].Count != 6 || p.TTFT.Buckets[2].Count != 6 {
		t.Errorf("TTFT = %+v, want 0.1: 5, 0.5: 6, +Inf: 6", p.TTFT)
	}
	checkFloat(t, "merged p90", p.TTFT.Quantile(0.9), 0.26)

	// an EPP's flow-control queue that dipped below 0 after a flow's
	// garbage collection is the router's own: not refused, that flow read
	// as 0 (flowHeld);
	// an empty pool (ready 0) reads saturation 1.0 (fail-closed).
	p = readString(t, "llm_d_epp_ready_endpoints{name=\"p\"} 0\nllm_d_epp_flow_control_queue_size{fairness_id=\"a\"} -1\nllm_d_epp_flow_control_pool_saturation{stage=\"effective\"} 1\n", modelserver.Unknown)
	checkFloat(t, "flow queue", p.Pool.FlowQueue, 0)
	checkFloat(t, "ready", p.Pool.Ready, 0)

	// a router's page of one engine is that engine's load as the router
	// counts it (its running: in prefill + decoding).
	p = readString(t, "vllm:num_requests_running{server=\"http://10.0.0.7:8000\"} 7\n", modelserver.Unknown)
	checkFloat(t, "router's one engine running", p.Running, 7)

	// a garbage value in a family the page is not read from is not refused:
	// vLLM reads kv_cache_usage_perc and ignores gpu_cache_usage_perc.
	p = readString(t, "vllm:kv_cache_usage_perc 0.5\nvllm:gpu_cache_usage_perc 7\n", modelserver.Unknown)
	checkFloat(t, "kv", p.KV, 0.5)
}

// Prometheus's parser quotes the whole offending line: a 1 MB label value
// made a 1 MB error message. The message is cut, the line still named.
func TestPageErrorMessageIsBounded(t *testing.T) {
	page := "vllm:num_requests_running 1\nvllm:num_requests_waiting{x=\"" + strings.Repeat("é", 500000) + "\"} 2 garbage\n"
	_, err := Read(strings.NewReader(page), "", "big.prom", modelserver.Unknown)
	var pe *PageError
	if !errors.As(err, &pe) || pe.Line != 2 {
		t.Fatalf("err = %.200v, want *PageError at line 2", err)
	}
	msg := err.Error()
	if len(msg) > 700 || !strings.HasPrefix(msg, "big.prom:2: invalid metrics page: ") || !strings.Contains(msg, "message cut") || !utf8.ValidString(msg) {
		t.Errorf("message of %d bytes: %.300q", len(msg), msg)
	}
}

// "-" twice: stdin is read once; the second is a source error, not an
// empty page that fails with "no known server profile".
func TestLoadAllStdinOnce(t *testing.T) {
	stdin := strings.NewReader("vllm:num_requests_running 3\n")
	pages, errs := LoadAll(context.Background(), nil, []string{"-", "-"}, stdin, modelserver.Unknown, 0)
	if errs[0] != nil || pages[0] == nil || pages[0].Running != 3 {
		t.Fatalf("first -: %v %+v", errs[0], pages[0])
	}
	if !errors.Is(errs[1], ErrSource) || pages[1] != nil || !strings.Contains(errs[1].Error(), "only once") {
		t.Errorf("second -: %v %+v, want ErrSource", errs[1], pages[1])
	}
}

// Auto-detection prefers a server whose queue has values over one whose
// queue is only declared: sglang running 3 was read as vLLM, all ABSENT.
func TestDetectPrefersValues(t *testing.T) {
	p := readString(t, "# TYPE vllm:num_requests_running gauge\nsglang:num_running_reqs 3\n", modelserver.Unknown)
	if p.Server != modelserver.SGLang || p.Running != 3 {
		t.Errorf("server %v running %v, want sglang 3", p.Server, p.Running)
	}
	// declared only (vLLM before its first request, docs/design.md page 19): still vLLM.
	p = readString(t, "# TYPE vllm:num_requests_running gauge\n# TYPE tgi_queue_size gauge\n", modelserver.Unknown)
	if p.Server != modelserver.VLLM {
		t.Errorf("server %v, want vllm", p.Server)
	}
}

// URLs: a password never reaches Page.Source or an error; schemes are
// case-insensitive; a URL without a host is invalid input, not a fetch
// failure.
func TestLoadURLEdges(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if u, p, ok := r.BasicAuth(); !ok || u != "user" || p != "secret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte("vllm:num_requests_running 2\n"))
	}))
	defer srv.Close()
	withAuth := strings.Replace(srv.URL, "http://", "http://user:secret@", 1)
	p, err := Load(context.Background(), nil, withAuth, nil, modelserver.Unknown)
	if err != nil || p.Running != 2 || strings.Contains(p.Source, "secret") || !strings.Contains(p.Source, "user:xxxxx@") {
		t.Errorf("Load = %+v, %v; want running 2 and the password hidden", p, err)
	}
	_, err = Load(context.Background(), nil, strings.Replace(withAuth, "secret", "wrong", 1), nil, modelserver.Unknown)
	if !errors.Is(err, ErrFetch) || strings.Contains(err.Error(), "wrong") {
		t.Errorf("bad password: %v, want ErrFetch without the password", err)
	}
	p, err = Load(context.Background(), nil, strings.Replace(withAuth, "http://", "HTTP://", 1), nil, modelserver.Unknown)
	if err != nil || p.Running != 2 {
		t.Errorf("HTTP:// = %+v, %v", p, err)
	}
	for _, bad := range []string{"http://", "https:///metrics", "http://[::1"} {
		if _, err := Load(context.Background(), nil, bad, nil, modelserver.Unknown); !errors.Is(err, ErrSource) || IsRuntime(err) {
			t.Errorf("%s: %v, want ErrSource", bad, err)
		}
	}
}

// locate (one parse plus a line or two) names the same line as errorLine's
// binary search over prefixes, for errors anywhere on a page.
func TestLocateAgreesWithBinarySearch(t *testing.T) {
	good := "# HELP vllm:num_requests_running r\n# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine=\"0\"} 1\n\n# a comment\nvllm:num_requests_waiting 2\n"
	for _, bad := range []string{
		"vllm:num_requests_waiting{engine=\"0\n",
		"vllm:num_requests_waiting 1 2 3\n",
		"vllm:num_requests_waiting abc\n",
		"# TYPE x\n",
		"{}\n",
		"vllm:num_requests_running{engine=\"0\"} 5\n", // duplicate of line 3
	} {
		for _, page := range []string{bad + good, good + bad, good + bad + good[:40] + "\n"} {
			b := []byte(page)
			_, err := parse(b, ContentTypeText)
			if err == nil {
				t.Fatalf("%q parses", page)
			}
			if got, want := locate(b, ContentTypeText, err), errorLine(b, ContentTypeText); got != want {
				t.Errorf("%q: locate %d, binary search %d", page, got, want)
			}
		}
	}
}

// The same page under other spellings is the same source: scheme and host
// case (RFC 3986 6.2.2.1), the scheme's default port, an empty path, a
// fragment, user information; a file by any relative path.
func TestDuplicates(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	srcs := []string{
		"http://vllm-0:8000/metrics",     // 0
		"HTTP://VLLM-0:8000/metrics",     // 1 = 0
		"http://vllm-0:8001/metrics",     // 2
		"https://vllm-1",                 // 3
		"https://vllm-1:443/#top",        // 4 = 3
		"http://u:p@vllm-0:8000/metrics", // 5 = 0
		"http://vllm-0:8000/metrics?x=1", // 6: another query, another page
		"page.prom",                      // 7
		"./sub/../page.prom",             // 8 = 7
		dir + "/page.prom",               // 9 = 7
		"other.prom",                     // 10
		"-",                              // 11
		"-",                              // 12 = 11
		"http://[::1]:80/metrics",        // 13
		"http://[::1]/metrics",           // 14 = 13
	}
	want := []int{-1, 0, -1, -1, 3, 0, -1, -1, 7, 7, -1, -1, 11, -1, 13}
	got := sourcekey.Duplicates(srcs)
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("%s: duplicate of %d, want %d (key %s)", srcs[i], got[i], want[i], sourcekey.Of(srcs[i]))
		}
	}
	err := CheckDistinct([]string{"a.prom", "http://u:secret@h/m", "./a.prom", "http://h/m"})
	if !errors.Is(err, ErrSource) || !strings.Contains(err.Error(), "./a.prom: invalid page source: the same page as page 1 a.prom") ||
		!strings.Contains(err.Error(), "the same page as page 2 http://u:xxxxx@h/m") || strings.Contains(err.Error(), "secret") {
		t.Errorf("CheckDistinct: %v", err)
	}
	if err := CheckDistinct([]string{"a.prom", "b.prom"}); err != nil {
		t.Errorf("distinct pages: %v", err)
	}
}

// LoadAll reads a page named twice once: the second is ErrSource.
func TestLoadAllSamePage(t *testing.T) {
	f := filepath.Join(t.TempDir(), "p.prom")
	if err := os.WriteFile(f, []byte("vllm:num_requests_running 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	pages, errs := LoadAll(context.Background(), nil, []string{f, filepath.Join(filepath.Dir(f), ".", "p.prom")}, nil, modelserver.Unknown, 0)
	if errs[0] != nil || pages[0] == nil {
		t.Fatalf("first: %v", errs[0])
	}
	if !errors.Is(errs[1], ErrSource) || pages[1] != nil || !strings.Contains(errs[1].Error(), "same page as page 1") {
		t.Errorf("second: %v %+v, want ErrSource", errs[1], pages[1])
	}
}
