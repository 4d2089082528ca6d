package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/infscale/infscale/internal/sharedtest"
)

// runParseCLI runs `infscale parse args...` with stdin and returns the exit
// code and both streams.
func runParseCLI(t *testing.T, stdin io.Reader, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	if stdin == nil {
		stdin = strings.NewReader("")
	}
	code = run(context.Background(), append([]string{"parse"}, args...), stdin, &out, &errb)
	return code, out.String(), errb.String()
}

// parseRowJSON mirrors the documented JSON shape (docs/parse.md).
type parseRowJSON struct {
	Source  string   `json:"source"`
	Server  string   `json:"server"`
	Running *float64 `json:"running"`
	Waiting *float64 `json:"waiting"`
	KVUsage *float64 `json:"kv_usage"`
	Engines int      `json:"engines"`
	Suspect string   `json:"suspect"`
	Rates   *struct {
		IntervalSeconds float64  `json:"interval_seconds"`
		PromptTokens    *float64 `json:"prompt_tokens_per_second"`
		Requests        *float64 `json:"requests_per_second"`
		CPUCores        *float64 `json:"cpu_cores"`
		CPUPercent      *float64 `json:"cpu_percent"`
		TTFTP95         *float64 `json:"ttft_p95_seconds"`
		PrefixCacheHit  *float64 `json:"prefix_cache_hit_ratio"`
		Reset           bool     `json:"reset"`
	} `json:"rates"`
}

func decodeRows(t *testing.T, stdout string) []parseRowJSON {
	t.Helper()
	var rows []parseRowJSON
	if err := json.Unmarshal([]byte(stdout), &rows); err != nil {
		t.Fatalf("stdout is not a JSON array: %v\n%s", err, stdout)
	}
	return rows
}

// isNum reports whether p is a JSON number equal to want (nil want = null).
func isNum(p *float64, want *float64) bool {
	if p == nil || want == nil {
		return p == nil && want == nil
	}
	return math.Abs(*p-*want) < 1e-9
}

func f(v float64) *float64 { return &v }

func writePage(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestParseSharedPagesJSON(t *testing.T) {
	dir := sharedtest.Path(t)
	pages := []string{
		dir + "/cases/06-vllm-dp-engine-series.prom",
		dir + "/metrics/19-vllm-v0-0.5.4-families-without-samples.prom",
		dir + "/metrics/11-llamacpp-b4600-requests-processing-deferred.prom",
		dir + "/metrics/03-vllm-0.10.0-created-series-engine-label.prom",
		dir + "/cases/18-stuck-engine-not-load.prom",
	}
	code, stdout, stderr := runParseCLI(t, nil, append([]string{"--output", "json"}, pages...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rows := decodeRows(t, stdout)
	want := []struct {
		server               string
		running, waiting, kv *float64
		suspect              bool
	}{
		{"vllm", f(10), f(4), f(0.91), false},              // C06: 7+3, 4+0, max(0.91, 0.35)
		{"vllm", nil, nil, nil, false},                     // page 19: declared only, all null (not 0)
		{"llamacpp", f(0), f(0), nil, false},               // page 11: no KV gauge
		{"vllm", nil, nil, f(9.75010481363281e-06), false}, // page 03: tiny KV, not 9.75
		{"vllm", f(0), f(6), f(0), true},                   // C18: stuck, flagged
	}
	if len(rows) != len(want) {
		t.Fatalf("%d rows, want %d", len(rows), len(want))
	}
	for i, w := range want {
		r := rows[i]
		if r.Source != pages[i] || r.Server != w.server || !isNum(r.Running, w.running) || !isNum(r.Waiting, w.waiting) ||
			!isNum(r.KVUsage, w.kv) || (r.Suspect != "") != w.suspect || r.Rates != nil {
			t.Errorf("row %d = %+v, want %s %v %v %v suspect %v", i, r, w.server, w.running, w.waiting, w.kv, w.suspect)
		}
	}
	// Absent is null in the JSON text itself.
	if !strings.Contains(stdout, `"running": null`) {
		t.Errorf("no null running in %s", stdout)
	}
}

func TestParseText(t *testing.T) {
	dir := t.TempDir()
	page := writePage(t, dir, "dp.prom", `vllm:num_requests_running{engine="0"} 3
vllm:num_requests_running{engine="1"} 5
vllm:num_requests_waiting{engine="0"} 1
vllm:num_requests_waiting{engine="1"} 2
vllm:kv_cache_usage_perc{engine="0"} 0.35
vllm:kv_cache_usage_perc{engine="1"} 0.81
`)
	code, stdout, stderr := runParseCLI(t, strings.NewReader("llamacpp:requests_processing 2\n"), page, "-")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	lines := strings.Split(strings.TrimSpace(stdout), "\n")
	// header, dp.prom (running 3+5 = 8, waiting 1+2 = 3, kv 0.81, 2 engines),
	// stdin (llama.cpp running 2, waiting and KV absent), legend.
	if len(lines) != 4 {
		t.Fatalf("stdout:\n%s", stdout)
	}
	if got := strings.Fields(lines[1]); strings.Join(got, " ") != page+" vllm 8 3 0.81 2" {
		t.Errorf("row 1 = %q", got)
	}
	if got := strings.Fields(lines[2]); strings.Join(got, " ") != "stdin llamacpp 2 - - 1" {
		t.Errorf("row 2 = %q", got)
	}
	if !strings.Contains(lines[3], "absent") {
		t.Errorf("no legend: %q", lines[3])
	}
}

func TestParseServerFlag(t *testing.T) {
	dir := t.TempDir()
	page := writePage(t, dir, "go.prom", "go_goroutines 12\n")
	code, stdout, stderr := runParseCLI(t, nil, "--server", "sglang", "--output", "json", page)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	rows := decodeRows(t, stdout)
	if len(rows) != 1 || rows[0].Server != "sglang" || rows[0].Running != nil || rows[0].Waiting != nil {
		t.Errorf("rows = %+v, want sglang with null signals", rows)
	}
}

func TestParseInvalid(t *testing.T) {
	dir := t.TempDir()
	good := writePage(t, dir, "good.prom", "vllm:num_requests_running 1\n")
	bad := writePage(t, dir, "bad.prom", "vllm:num_requests_running 1\n\nvllm:num_requests_waiting{model=\"a} 2\n")
	none := writePage(t, dir, "node.prom", "node_load1 0.5\n")
	for name, tc := range map[string]struct {
		args  []string
		stdin string
		code  int
		msg   []string
	}{
		"parse error names file and line": {[]string{good, bad}, "", 2, []string{bad + ":3: invalid metrics page"}},
		"no known profile lists families": {[]string{none}, "", 2, []string{"node.prom", "no known server profile", "vllm:num_requests_running", "llamacpp:requests_processing", "sglang:num_running_reqs", "node_load1"}},
		"JSON body":                       {[]string{"-"}, `[{"gpu": 1}]`, 2, []string{"stdin:1", "JSON"}},
		"missing file":                    {[]string{filepath.Join(dir, "nope.prom")}, "", 2, []string{"nope.prom", "invalid page source"}},
		"stdin twice":                     {[]string{"-", "-"}, "", 2, []string{"standard input"}},
		"stdin with interval":             {[]string{"--interval", "1s", "-"}, "", 2, []string{"standard input"}},
		"bad server":                      {[]string{"--server", "ollama", good}, "", 2, []string{"vllm, sglang, llamacpp"}},
		"bad output":                      {[]string{"--output", "xml", good}, "", 2, []string{"--output"}},
		"negative cpu request":            {[]string{"--cpu-request", "-1", good}, "", 2, []string{"--cpu-request"}},
		"negative interval":               {[]string{"--interval", "-1s", good}, "", 2, []string{"--interval"}},
		// Bounded (1ns gave rates over no time, 100000h slept), 0s refused
		// rather than ignored, and files refused: a file read twice is the
		// same page, its rates 0 and its INTERVAL 0s.
		"cpu request without interval": {[]string{"--cpu-request", "2", "http://127.0.0.1:1/metrics"}, "", 2, []string{"--cpu-request needs --interval"}},
		"zero interval":                {[]string{"--interval", "0s", "http://127.0.0.1:1/metrics"}, "", 2, []string{"--interval 0s: want 100ms to 1h"}},
		"nanosecond interval":          {[]string{"--interval", "1ns", "http://127.0.0.1:1/metrics"}, "", 2, []string{"--interval 1ns: want 100ms to 1h"}},
		"huge interval":                {[]string{"--interval", "100000h", "http://127.0.0.1:1/metrics"}, "", 2, []string{"--interval 100000h: want 100ms to 1h"}},
		"interval with file":           {[]string{"--interval", "15s", "http://127.0.0.1:1/metrics", good}, "", 2, []string{"--interval with PAGE " + good + ": a file is the same page when read again"}},
		"no page":                      {nil, "", 2, []string{"PAGE"}},
		"timeout with files only":      {[]string{"--timeout", "3s", good}, "", 2, []string{"--timeout needs a PAGE that is an http(s) URL"}},
		// An unset shell variable ("$PAGE") printed ": invalid page source:
		// no such file or directory", naming nothing.
		"empty page": {[]string{good, ""}, "", 2, []string{"PAGE 2 is empty", "unset shell variable"}},
		// A path that names no file is the input's fault, as a missing one
		// is: they were exit 1, "cannot fetch metrics page".
		"path under a file": {[]string{filepath.Join(good, "x.prom")}, "", 2, []string{"x.prom: invalid page source: not a directory"}},
		"symlink loop":      {[]string{symlinkLoop(t, dir)}, "", 2, []string{"loop.prom: invalid page source: too many levels of symbolic links"}},
	} {
		t.Run(name, func(t *testing.T) {
			code, stdout, stderr := runParseCLI(t, strings.NewReader(tc.stdin), tc.args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d; stderr %s", code, tc.code, stderr)
			}
			if tc.code == 2 && strings.Contains(stdout, "SOURCE") {
				t.Errorf("rows printed on failure: %s", stdout)
			}
			for _, m := range tc.msg {
				if !strings.Contains(stderr, m) {
					t.Errorf("stderr %q lacks %q", stderr, m)
				}
			}
		})
	}
}

func TestParseUnreachableURL(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + l.Addr().String() + "/metrics"
	l.Close()
	code, stdout, stderr := runParseCLI(t, nil, url)
	if code != 1 || stdout != "" || !strings.Contains(stderr, url) || !strings.Contains(stderr, "cannot fetch") {
		t.Errorf("exit %d stdout %q stderr %q, want 1 naming the URL", code, stdout, stderr)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", 503) }))
	defer srv.Close()
	if code, _, stderr := runParseCLI(t, nil, srv.URL); code != 1 || !strings.Contains(stderr, "503") {
		t.Errorf("503: exit %d stderr %q, want 1", code, stderr)
	}
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "vllm:num_requests_running 1\nvllm:num_requests_waiting two\n")
	}))
	defer bad.Close()
	if code, _, stderr := runParseCLI(t, nil, bad.URL+"/metrics"); code != 2 || !strings.Contains(stderr, bad.URL+"/metrics:2:") {
		t.Errorf("bad URL page: exit %d stderr %q, want 2 naming URL:2", code, stderr)
	}
}

// counterServer serves a vLLM page whose counters grow by fixed steps on
// every scrape: prompt tokens +300, successes +3, CPU +1.5 s, TTFT
// buckets le 0.5 +10, le 2 +20, +Inf +20, and prefix-cache queries +300
// of which hits +225.
func counterServer(t *testing.T) *httptest.Server {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		i := n.Add(1)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprintf(w, "process_start_time_seconds 1.7e9\nprocess_cpu_seconds_total %g\nvllm:num_requests_running 4\nvllm:num_requests_waiting 1\nvllm:prompt_tokens_total %d\nvllm:request_success_total{finished_reason=\"stop\"} %d\n",
			1.5*float64(i), 300*i, 3*i)
		fmt.Fprintf(w, "vllm:time_to_first_token_seconds_bucket{le=\"0.5\"} %d\nvllm:time_to_first_token_seconds_bucket{le=\"2.0\"} %d\nvllm:time_to_first_token_seconds_bucket{le=\"+Inf\"} %d\n",
			10*i, 20*i, 20*i)
		fmt.Fprintf(w, "vllm:prefix_cache_queries_total %d\nvllm:prefix_cache_hits_total %d\n", 300*i, 225*i)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func TestParseRates(t *testing.T) {
	check := func(t *testing.T, rows []parseRowJSON, idx int) {
		t.Helper()
		r := rows[idx].Rates
		if r == nil || r.IntervalSeconds <= 0 {
			t.Fatalf("row %d has no rates: %+v", idx, rows[idx])
		}
		// increases per scrape: 300 tokens, 3 requests, 1.5 CPU s; rate x interval = increase.
		dt := r.IntervalSeconds
		for name, c := range map[string]struct {
			got  *float64
			want float64
		}{"prompt": {r.PromptTokens, 300}, "requests": {r.Requests, 3}, "cpu": {r.CPUCores, 1.5}} {
			if c.got == nil || math.Abs(*c.got*dt-c.want) > 1e-6 {
				t.Errorf("%s rate %v over %vs, want increase %v", name, c.got, dt, c.want)
			}
		}
		// CPU % of a 2-core request = 100 * cores / 2.
		// TTFT p95 over the interval: rank 0.95 x 20 = 19 falls in le 2 (10..20):
		// 0.5 + (2-0.5) x (19-10)/(20-10) = 1.85 s.
		if !isNum(r.TTFTP95, f(1.85)) {
			t.Errorf("ttft p95 = %v, want 1.85", r.TTFTP95)
		}
		// Prefix cache: 225 of 300 queried tokens found, 0.75.
		if !isNum(r.PrefixCacheHit, f(0.75)) {
			t.Errorf("prefix cache hit ratio = %v, want 0.75", r.PrefixCacheHit)
		}
		if r.CPUPercent == nil || math.Abs(*r.CPUPercent-100**r.CPUCores/2) > 1e-9 || r.Reset {
			t.Errorf("cpu %% = %v for cores %v, reset %v", r.CPUPercent, r.CPUCores, r.Reset)
		}
	}
	// The same page named twice is refused before anything is read (it
	// gave rates over the microseconds between two reads, "0s" for a
	// file); --interval is how to get rates.
	t.Run("repeated page", func(t *testing.T) {
		srv := counterServer(t)
		for _, pages := range [][]string{{srv.URL, srv.URL}, {srv.URL + "/", strings.ToUpper(srv.URL[:4]) + srv.URL[4:]}} {
			code, stdout, stderr := runParseCLI(t, nil, append([]string{"--output", "json"}, pages...)...)
			if code != 2 || stdout != "" || !strings.Contains(stderr, "the same page as page 1") {
				t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 naming the repeat", pages, code, stdout, stderr)
			}
		}
		page := filepath.Join("..", "..", "examples", "pages", "vllm-0.prom")
		code, stdout, stderr := runParseCLI(t, nil, page, "./"+page)
		if code != 2 || stdout != "" || !strings.Contains(stderr, "./"+page+": invalid page source: the same page as page 1") {
			t.Errorf("file twice: exit %d, stdout %q, stderr %q; want 2 naming the repeat", code, stdout, stderr)
		}
	})
	t.Run("interval", func(t *testing.T) {
		srv := counterServer(t)
		code, stdout, stderr := runParseCLI(t, nil, "--output", "json", "--cpu-request", "2", "--interval", "100ms", srv.URL)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		rows := decodeRows(t, stdout)
		if len(rows) != 1 || rows[0].Rates.IntervalSeconds < 0.1 {
			t.Fatalf("rows = %+v, want 1 with rates over >= 100ms", rows)
		}
		check(t, rows, 0)
	})
	t.Run("text", func(t *testing.T) {
		srv := counterServer(t)
		code, stdout, stderr := runParseCLI(t, nil, "--interval", "100ms", srv.URL)
		if code != 0 || !strings.Contains(stdout, "PROMPT_TOK/S") || !strings.Contains(stdout, "CPU_%") {
			t.Fatalf("exit %d stdout %s stderr %s", code, stdout, stderr)
		}
		// The rates as the page's signals are written (num): 300 tokens
		// over some 0.1 s is about 3000 tok/s, a whole number; 3
		// requests about 30/s, 3 digits at most; TTFT p95 1.85 s as
		// above. It printed 6 digits (2961.54, 29.6154).
		cells := strings.Fields(strings.Split(stdout, "\n")[1])
		if len(cells) != 13 {
			t.Fatalf("row %q: %d cells, want 13", cells, len(cells))
		}
		prompt, req, ttft := cells[7], cells[9], cells[12]
		if strings.Contains(prompt, ".") || len(strings.TrimLeft(strings.ReplaceAll(req, ".", ""), "0")) > 3 || ttft != "1.85" {
			t.Errorf("PROMPT_TOK/S %q, REQ/S %q, TTFT_P95_S %q: want a whole number, 3 significant digits, 1.85\n%s", prompt, req, ttft, stdout)
		}
	})
}

// TestParseNum: parse's one number format, for the page's signals and the
// interval's rates, worked by hand: 3 significant digits (a vLLM KV usage
// 0.016157205 reads 0.0162, 4.793734 tok/s 4.79), whole numbers from 100
// on (18433.6 tok/s reads 18434, not 1.84e+04), decimals down to 1e-6.
func TestParseNum(t *testing.T) {
	for v, want := range map[float64]string{
		0.016157205: "0.0162", 4.793734: "4.79", 18433.6: "18434", 14: "14", 0.87: "0.87", 1.85: "1.85",
		99.94: "99.9", 0.0000123456: "0.0000123", 1e-9: "1e-09", 0: "0", -2.5: "-2.5",
		math.NaN(): "-", math.Inf(1): "-",
	} {
		if got := num(v); got != want {
			t.Errorf("num(%v) = %q, want %q", v, got, want)
		}
	}
}

// Issue 23 item 8's kind on `parse`: a running gauge declared a counter
// is shown absent (unknown), not its value, with a note saying why.
func TestParseWrongType(t *testing.T) {
	page := "# TYPE vllm:num_requests_running counter\nvllm:num_requests_running 3\n# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting 1\n"
	code, out, errs := runParseCLI(t, strings.NewReader(page), "-")
	if code != 0 || !strings.Contains(out, "note: stdin: vllm:num_requests_running is declared a counter, infscale reads it as a gauge: its value is unknown") {
		t.Errorf("exit %d\n%s\n%s", code, out, errs)
	}
}

// TestParseEngineNaN: engine 0 running 2 beside engine 1 running NaN
// (testdata/vllm-engine-nan.prom). decide and serve read that replica's
// running as unknown; parse showed 2. It shows - (JSON null, "unknown":
// ["running"]) and a note giving the finite samples' 2; waiting 0 + 0 = 0
// is read.
func TestParseEngineNaN(t *testing.T) {
	const page = "testdata/vllm-engine-nan.prom"
	code, out, errs := runParseCLI(t, nil, page)
	if code != 0 || !strings.Contains(out, page+"  vllm    -        0        -   2\n") ||
		!strings.Contains(out, "note: "+page+": running has a NaN or infinite sample (an engine that reports no number): unknown, as decide and serve read it (the finite samples give 2)\n") {
		t.Errorf("exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = runParseCLI(t, nil, "-o", "json", page)
	var rows []struct {
		Running *float64 `json:"running"`
		Waiting *float64 `json:"waiting"`
		Unknown []string `json:"unknown"`
	}
	if err := json.Unmarshal([]byte(out), &rows); code != 0 || err != nil || len(rows) != 1 {
		t.Fatalf("exit %d, %v\n%s\n%s", code, err, out, errs)
	}
	if r := rows[0]; r.Running != nil || r.Waiting == nil || *r.Waiting != 0 || len(r.Unknown) != 1 || r.Unknown[0] != "running" {
		t.Errorf("row %+v, want running null, waiting 0, unknown [running]", r)
	}
}

// symlinkLoop is a path in dir that is a loop of two symbolic links.
func symlinkLoop(t *testing.T, dir string) string {
	t.Helper()
	a, b := filepath.Join(dir, "loop.prom"), filepath.Join(dir, "loop2.prom")
	if err := os.Symlink(b, a); err != nil {
		t.Skipf("no symbolic links here: %v", err)
	}
	if err := os.Symlink(a, b); err != nil {
		t.Fatal(err)
	}
	return a
}

// TestParseAllNaN: a page whose every running sample is NaN has no finite
// samples to give: the note said "(the finite samples give -)"; it says
// none is finite.
func TestParseAllNaN(t *testing.T) {
	page := "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine=\"0\"} NaN\n# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{engine=\"0\"} 1\n"
	code, out, errs := runParseCLI(t, strings.NewReader(page), "-")
	if want := "note: stdin: running has a NaN or infinite sample (an engine that reports no number): unknown, as decide and serve read it (no sample is finite)\n"; code != 0 || !strings.Contains(out, want) {
		t.Errorf("exit %d\n%s\n%s\nwant %q", code, out, errs, want)
	}
}

// TestParseFootnote: the footnote under the table said "see its note"
// for every "-", also under llama.cpp's page, whose KV is "-" for want of
// a KV gauge and which prints no note line: a pointer to nothing. It now
// names that case, and points to a note line only for a NaN, which has one.
func TestParseFootnote(t *testing.T) {
	code, out, errs := runParseCLI(t, nil, "../../examples/pages/llamacpp.prom")
	if code != 0 || !strings.Contains(out, "such as llama.cpp's KV usage") || strings.Contains(out, "\nnote:") || strings.Contains(out, "see its note") {
		t.Errorf("llama.cpp page: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = runParseCLI(t, nil, "testdata/vllm-engine-nan.prom")
	if code != 0 || !strings.Contains(out, "a NaN beside finite ones (a note: line below names it))\nnote: ") {
		t.Errorf("NaN page: exit %d\n%s\n%s", code, out, errs)
	}
}
