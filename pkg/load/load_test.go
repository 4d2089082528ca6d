package load

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/trace"
)

// TestPercentile: numpy's linear percentile: of 1..5, p50 = 3, p95 = 4 +
// 0.8 x (5 - 4) = 4.8 (rank 0.95 x 4 = 3.8).
func TestPercentile(t *testing.T) {
	l := []float64{1, 2, 3, 4, 5}
	if got := percentile(l, 50); got != 3 {
		t.Errorf("p50 %v, want 3", got)
	}
	if got := percentile(l, 95); math.Abs(got-4.8) > 1e-12 {
		t.Errorf("p95 %v, want 4.8", got)
	}
	if !math.IsNaN(percentile(nil, 50)) {
		t.Error("p50 of nothing is not NaN")
	}
}

// TestSummarize: TPOT = (e2e - TTFT) / (output - 1) per request; ITL pooled;
// output tokens/s = usage tokens / duration; errors counted apart.
func TestSummarize(t *testing.T) {
	recs := []Record{
		{TTFT: 0.1, ITL: []float64{0.02, 0.02, 0.02}, E2E: 0.16, PromptTokens: 10, OutputTokens: 4},
		{TTFT: 0.3, ITL: []float64{0.04}, E2E: 0.34, PromptTokens: 10, OutputTokens: 2},
		{Err: context.DeadlineExceeded},
	}
	s := Summarize(recs, 2*time.Second)
	// Total tokens/s: (10 + 10 prompt + 4 + 2 output) / 2 s = 13.
	if s.Requests != 2 || s.Errors != 1 || s.OutputTokens != 6 || s.OutputTokensPerS != 3 || s.TotalTokensPerS != 13 {
		t.Errorf("%+v", s)
	}
	// TPOTs 0.06/3 = 0.02 and 0.04/1 = 0.04: p50 0.03. ITLs 0.02 x 3, 0.04: p50 0.02.
	if math.Abs(float64(s.TPOTP50)-0.03) > 1e-12 || float64(s.ITLP50) != 0.02 || math.Abs(float64(s.TTFTP50)-0.2) > 1e-12 {
		t.Errorf("TPOT p50 %v ITL p50 %v TTFT p50 %v, want 0.03, 0.02, 0.2", s.TPOTP50, s.ITLP50, s.TTFTP50)
	}
	// TTFTs 0.1, 0.3: p90 at rank 0.9 x 1 = 0.1 + 0.9 x 0.2 = 0.28 (the
	// accuracy set's actual_ttft_p90_ms); e2e 0.16, 0.34: 0.16 + 0.9 x 0.18 = 0.322.
	if math.Abs(float64(s.TTFTP90)-0.28) > 1e-12 || math.Abs(float64(s.E2EP90)-0.322) > 1e-12 {
		t.Errorf("TTFT p90 %v e2e p90 %v, want 0.28, 0.322", s.TTFTP90, s.E2EP90)
	}
	b, _ := json.Marshal(Summarize(nil, 0))
	for _, key := range []string{`"ttft_p50_s":null`, `"ttft_p90_s":null`, `"ttft_p95_s":null`, `"e2e_p90_s":null`, `"itl_p50_s":null`, `"itl_p95_s":null`, `"e2e_p50_s":null`, `"requests":0`, `"errors":0`, `"output_tokens_per_s":0`} {
		if !strings.Contains(string(b), key) {
			t.Errorf("JSON lacks %s: %s", key, b)
		}
	}
}

// TestKnee: the highest load such that it and all lower loads meet the SLO;
// a rate knee's target is Little's law (rate x mean e2e).
func TestKnee(t *testing.T) {
	pt := func(c int, ttft, itl float64) Summary {
		return Summary{Concurrency: c, Requests: 10, TTFTP95: Float(ttft), ITLP95: Float(itl)}
	}
	slo := SLO{TTFTP95: 1, ITLP95: 0.05}
	k := FindKnee([]Summary{pt(1, 0.1, 0.01), pt(2, 0.2, 0.02), pt(4, 0.5, 0.06), pt(8, 0.3, 0.01)}, slo)
	if !k.Found || k.Concurrency != 2 || k.Target != 2 || k.LowerBound {
		t.Errorf("%+v, want the knee at 2 (4 misses ITL; 8 above a miss does not count), not a lower bound", k)
	}
	// Every point within the SLO: the last is the sweep's end, not a knee.
	if k := FindKnee([]Summary{pt(1, 0.1, 0.01), pt(2, 0.2, 0.02)}, slo); !k.Found || k.Concurrency != 2 || !k.LowerBound {
		t.Errorf("%+v, want 2 as a lower bound", k)
	}
	if k := FindKnee([]Summary{pt(1, 3, 0.01)}, slo); k.Found {
		t.Errorf("%+v, want none", k)
	}
	r := Summary{Rate: 5, Requests: 10, RequestsPerS: 5, TTFTP95: 0.5, ITLP95: 0.01, E2EMean: 2.4}
	if k := FindKnee([]Summary{r}, slo); k.Target != 12 {
		t.Errorf("rate knee target %v, want 5 x 2.4 = 12", k.Target)
	}
}

func TestParseLoads(t *testing.T) {
	if l, err := ParseLoads("1, 2,4", true); err != nil || len(l) != 3 || l[2] != 4 {
		t.Errorf("%v %v", l, err)
	}
	for _, bad := range []string{"1,1", "2,1", "0", "1.5", "x", ""} {
		if _, err := ParseLoads(bad, true); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if l, err := ParseLoads("0.5,1.5", false); err != nil || l[0] != 0.5 {
		t.Errorf("rates: %v %v", l, err)
	}
}

func TestCheckLoopback(t *testing.T) {
	for _, ok := range []string{"http://127.0.0.1:8000", "http://[::1]:80", "http://localhost:1"} {
		if err := CheckLoopback(t.Context(), ok); err != nil {
			t.Errorf("%s: %v", ok, err)
		}
	}
	for _, bad := range []string{"http://10.0.0.1:8000", "http://8.8.8.8", "ftp://127.0.0.1", "127.0.0.1:8000", "http://127.0.0.1:99999", "http://127.0.0.1:0"} {
		if err := CheckLoopback(t.Context(), bad); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

// TestPrompt: n words, distinct per seed, the same for a seed.
func TestPrompt(t *testing.T) {
	a, b := Prompt(100, 1), Prompt(100, 2)
	if len(strings.Fields(a)) != 100 || a == b || a != Prompt(100, 1) {
		t.Errorf("prompts %q / %q", a[:40], b[:40])
	}
}

// TestOpenLoopBoundedByDuration: with --rate, no request starts at or after
// Duration and the run ends by then, however long the Poisson gaps are.
// The URL refuses connections, so each request ends (as an error) at once.
//
// At 0.05 req/s the gaps average 20 s; with 1 s the chance that a run sends
// anything is 1 - e^(-0.05) = 4.9%, and any request it sends started
// before 1 s. At 1e-300 req/s a gap is 1e300 s or so (it overflowed
// time.Duration and sent every request at once): no request starts. At
// 1e6 req/s with --requests 5 exactly 5 start.
func TestOpenLoopBoundedByDuration(t *testing.T) {
	for _, tc := range []struct {
		rate     float64
		requests int
		most     int // most records; -1: exactly requests
	}{
		{0.05, 2, 2},
		{1e-300, 1000, 0},
		{1e6, 5, -1},
	} {
		for seed := uint64(1); seed <= 3; seed++ {
			cfg := Config{URL: "http://127.0.0.1:1", Model: "m", Rate: tc.rate, Duration: time.Second, Requests: tc.requests,
				Timeout: time.Second, Seed: seed}
			t0 := time.Now()
			recs, _, err := Run(context.Background(), cfg)
			took := time.Since(t0)
			if err != nil {
				t.Fatal(err)
			}
			// 1 s of duration plus the refused connections' failure: far
			// less than the 20 s the first gap used to sleep.
			if took > 3*time.Second {
				t.Errorf("rate %g seed %d: run took %s, want it to end by the 1s duration", tc.rate, seed, took)
			}
			if tc.most >= 0 && len(recs) > tc.most || tc.most < 0 && len(recs) != tc.requests {
				t.Errorf("rate %g seed %d: %d requests, want %s %d", tc.rate, seed, len(recs), map[bool]string{true: "at most", false: "exactly"}[tc.most >= 0], max(tc.most, tc.requests))
			}
			for i, r := range recs {
				if r.Start >= time.Second {
					t.Errorf("rate %g seed %d: request %d started at %s, after the 1s duration", tc.rate, seed, i, r.Start)
				}
			}
		}
	}
}

// TestClosedLoopRampUpPastDuration: clients whose ramp-up delay is at or past
// Duration start nothing (they used to sleep out the delay). 4 clients over
// a 4 s ramp-up start at 0, 1, 2, 3 s; with a 1.5 s duration clients 3 and 4
// never start and the run ends by 1.5 s, not 3 s.
func TestClosedLoopRampUpPastDuration(t *testing.T) {
	cfg := Config{URL: "http://127.0.0.1:1", Model: "m", Concurrency: 4, RampUp: 4 * time.Second, Duration: 1500 * time.Millisecond,
		Requests: 2, Timeout: time.Second}
	t0 := time.Now()
	recs, _, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if took := time.Since(t0); took > 2500*time.Millisecond {
		t.Errorf("run took %s, want about 1.5s (the clients starting at 2 s and 3 s start nothing)", took)
	}
	if len(recs) != 2 {
		t.Errorf("%d requests, want --requests 2", len(recs))
	}
}

// TestKVPromptTokens: the second prompt length doubles the context per
// sequence (prompt + half the output) when it fits max_model_len, else
// halves it, else takes the longest that fits. By hand:
//
//	512 / 128, no bound or 8,192: 2 x 512 + 64 = 1,088 (contexts 576 and 1,152);
//	512 / 128 at 1,024: 1,088 + 128 does not fit; 256 - 32 = 224 (288 and 576);
//	6,000 / 4,000 at 8,192: 14,000 does not fit; 3,000 - 1,000 = 2,000 (4,000 and 8,000);
//	16 / 128 at 1,024: 32 + 64 = 96, 96 + 128 fits (80 and 160);
//	10 / 100 at 150: 70 + 100 does not fit, 5 - 25 < 1; the longest, 50 (60 and 100);
//	40 / 200 at 200: none fits (0).
func TestKVPromptTokens(t *testing.T) {
	for _, tc := range []struct{ prompt, maxTokens, maxLen, want int }{
		{512, 128, 0, 1088},
		{512, 128, 8192, 1088},
		{512, 128, 1024, 224},
		{6000, 4000, 8192, 2000},
		{16, 128, 1024, 96},
		{40, 200, 200, 0},
		{10, 100, 150, 50},
	} {
		if got := KVPromptTokens(tc.prompt, tc.maxTokens, tc.maxLen); got != tc.want {
			t.Errorf("KVPromptTokens(%d, %d, %d) = %d, want %d", tc.prompt, tc.maxTokens, tc.maxLen, got, tc.want)
		}
	}
}

// TestTimeoutNamed: a server that never answers, or streams one chunk and
// then stalls, fails each request after Timeout (200 ms, so 2 requests on
// one client end by about 400 ms) with an error that names the timeout,
// not Go's bare "context deadline exceeded".
func TestTimeoutNamed(t *testing.T) {
	stop := make(chan struct{}) // the handlers' stall ends when the test does
	defer close(stop)
	for _, tc := range []struct {
		name   string
		handle http.HandlerFunc
		want   string
	}{
		{"silent", func(w http.ResponseWriter, r *http.Request) { <-stop }, "no answer within the timeout of 200ms (--timeout)"},
		{"stalled", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"a\"}]}\n\n")
			w.(http.Flusher).Flush()
			<-stop
		}, "the stream did not end within the timeout of 200ms (--timeout)"},
	} {
		srv := httptest.NewServer(tc.handle)
		t0 := time.Now()
		recs, _, err := Run(context.Background(), Config{URL: srv.URL, Model: "m", Concurrency: 1, Requests: 2,
			Duration: 10 * time.Second, Timeout: 200 * time.Millisecond, MaxTokens: 4, PromptTokens: 4})
		took := time.Since(t0)
		srv.CloseClientConnections()
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 2 {
			t.Fatalf("%s: %d records, want 2", tc.name, len(recs))
		}
		for i, r := range recs {
			if r.Err == nil || !strings.Contains(r.Err.Error(), tc.want) {
				t.Errorf("%s: request %d: error %v, want one containing %q", tc.name, i, r.Err, tc.want)
			}
		}
		if took > 3*time.Second {
			t.Errorf("%s: took %s, want about 400 ms (2 x the 200 ms timeout)", tc.name, took)
		}
	}
}

// TestNoOutputSaysWhy: a server that ignores "stream": true and answers one
// JSON object, streams only [DONE], or streams an error event, fails each
// request saying which.
func TestNoOutputSaysWhy(t *testing.T) {
	for _, tc := range []struct {
		name, ctype, body, want string
	}{
		{"json", "application/json", `{"choices":[{"text":"hi"}]}`, `no output: the answer is "application/json" ("{\"choices\":[{\"text\":\"hi\"}]}"), not a stream (text/event-stream)`},
		{"empty stream", "text/event-stream", "data: [DONE]\n\n", "no output: the stream ended without a chunk that carries text"},
		// An error event (vLLM streams one when a request fails after its
		// headers went out) fails the request with the server's message;
		// after text it was a success with a short output.
		{"error event", "text/event-stream", `data: {"error": {"object": "error", "message": "context length exceeded", "type": "BadRequestError", "code": 400}}` + "\n\ndata: [DONE]\n\n", "the server streamed an error after 0 text chunks: context length exceeded"},
		{"error after text", "text/event-stream", `data: {"choices":[{"text":"a"}]}` + "\n\n" + `data: {"object": "error", "message": "engine dead"}` + "\n\ndata: [DONE]\n\n", "the server streamed an error after 1 text chunks: engine dead"},
		{"error string", "text/event-stream", `data: {"error": "Input validation error"}` + "\n\ndata: [DONE]\n\n", "the server streamed an error after 0 text chunks: Input validation error"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", tc.ctype)
			fmt.Fprint(w, tc.body)
		}))
		recs, _, err := Run(context.Background(), Config{URL: srv.URL, Model: "m", Concurrency: 1, Requests: 1,
			Duration: 10 * time.Second, Timeout: 5 * time.Second, MaxTokens: 4, PromptTokens: 4})
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		if len(recs) != 1 || recs[0].Err == nil || !strings.Contains(recs[0].Err.Error(), tc.want) {
			t.Errorf("%s: records %+v, want one failing with %q", tc.name, recs, tc.want)
		}
	}
}

// TestDiscoverModelSilent: a server that takes the connection and never
// answers /v1/models fails model discovery after 10 s saying so (it was
// Go's bare "context deadline exceeded").
func TestDiscoverModelSilent(t *testing.T) {
	if testing.Short() {
		t.Skip("waits the 10 s discovery timeout")
	}
	stop := make(chan struct{})
	defer close(stop)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-stop }))
	defer srv.CloseClientConnections()
	_, err := DiscoverModel(context.Background(), http.DefaultClient, srv.URL, nil, nil)
	want := "GET " + srv.URL + "/v1/models: no answer within 10s (give --served-model-name"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("error %v, want one containing %q", err, want)
	}
}

// TestDiscoverModelSaysWhat: nothing listening at the URL is no case for
// --served-model-name (the advice was to give it, and the run then failed
// every request the same way): it says to check the server and the port.
// A 200 that is not a model list (a web page at the URL: quoted, as a
// proxy's login page is by its text; an empty body) is said so, apart
// from a list without a model.
func TestDiscoverModelSaysWhat(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	if _, err := DiscoverModel(context.Background(), http.DefaultClient, closed, nil, nil); err == nil ||
		!strings.Contains(err.Error(), "connection refused") || !strings.Contains(err.Error(), "(is the server up? check the URL's host and port; a vLLM listens once its model is loaded: --ready-check-timeout 10m waits up to 10 minutes for a server that is starting)") || !errors.Is(err, ErrNotReady) {
		t.Errorf("closed port: %v; want connection refused and the advice", err)
	}
	for _, c := range []struct{ body, want string }{
		// (Go's server sniffs the page's Content-Type; bodyexcerpt quotes
		// a page by its text.)
		{"<html>login</html>", `/v1/models: not a model list but text/html: "login" (invalid character '<' looking for beginning of value): is the URL an OpenAI-compatible server's base URL?`},
		{"", "/v1/models: 200 OK with an empty body, not a model list: is the URL"},
		{`{"object":"list","data":[]}`, "/v1/models lists no model (give --served-model-name)"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, c.body) }))
		_, err := DiscoverModel(context.Background(), http.DefaultClient, srv.URL, nil, nil)
		srv.Close()
		if err == nil || !strings.Contains(err.Error(), "GET "+srv.URL+c.want) {
			t.Errorf("%q: %v; want %q", c.body, err, c.want)
		}
	}
}

// TestCutOffStreamFails: a stream closed after 2 of its 4 tokens, without
// data: [DONE], is an error (it counted as a success of 2 output tokens);
// the same stream ended by [DONE] is a success of 2 tokens.
func TestCutOffStreamFails(t *testing.T) {
	for _, tc := range []struct {
		done bool
		want string
	}{{false, "cut off: the stream ended after 2 text chunks without data: [DONE]"}, {true, ""}} {
		r := oneStream(t, fmt.Sprintf("done %v", tc.done), func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"choices\":[{\"text\":\"b\"}]}\n\n")
			if tc.done {
				fmt.Fprint(w, "data: [DONE]\n\n")
			}
		}, nil)
		switch {
		case tc.want != "" && (r.Err == nil || !strings.Contains(r.Err.Error(), tc.want)):
			t.Errorf("cut off: error %v, want %q", r.Err, tc.want)
		case tc.want == "" && (r.Err != nil || r.OutputTokens != 2):
			t.Errorf("with [DONE]: error %v, %d output tokens; want none and 2", r.Err, r.OutputTokens)
		}
	}
}

// sliceReader is a trace.Reader over fixed requests.
type sliceReader struct{ qs []trace.Request }

func (r *sliceReader) Next() (trace.Request, error) {
	if len(r.qs) == 0 {
		return trace.Request{}, io.EOF
	}
	q := r.qs[0]
	r.qs = r.qs[1:]
	return q, nil
}

func (r *sliceReader) Close() error { return nil }

// TestDurationFromFirstSend: the duration throughput is divided by runs from
// the first request's send to the last completion (genai-perf's benchmark
// duration), not from the run's start. A trace whose two requests arrive at
// 0.5 s and 0.6 s, each answered at once, lasts 0.1 s (plus loopback time),
// so 2 requests / 0.1 s = 20 req/s; it read 0.6 s and 3.3 req/s, the first
// arrival's idle half second counted as serving time.
func TestDurationFromFirstSend(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	src := trace.NewSource("two", 0, func() (trace.Reader, error) {
		return &sliceReader{qs: []trace.Request{{Arrival: 0.5, Prompt: 4, Output: 1}, {Arrival: 0.6, Prompt: 4, Output: 1}}}, nil
	})
	recs, dur, err := Run(context.Background(), Config{URL: srv.URL, Model: "m", Trace: &src, Duration: 10 * time.Second, Timeout: 5 * time.Second})
	if err != nil || len(recs) != 2 {
		t.Fatalf("%v, %d records", err, len(recs))
	}
	// The sends' own times, not the arrivals': on a busy machine the first
	// send's timer may fire late, even at the second's 0.6 s. From the
	// first send to the last completion; the run's start would add at
	// least the first arrival's 0.5 s.
	first, last := recs[0].Start, time.Duration(0)
	for _, r := range recs {
		first = min(first, r.Start)
		last = max(last, r.Start+time.Duration(r.E2E*float64(time.Second)))
	}
	if first < 500*time.Millisecond {
		t.Fatalf("first send at %s, before its arrival at 0.5 s", first)
	}
	if want := last - first; dur < want-5*time.Millisecond || dur > want+5*time.Millisecond {
		t.Errorf("duration %s, want %s (first send at %s to the last completion at %s)", dur, want, first, last)
	}
	if s := Summarize(recs, dur); math.Abs(s.RequestsPerS-2/dur.Seconds()) > 1e-9*s.RequestsPerS {
		t.Errorf("requests/s %.2f, want 2 / %s", s.RequestsPerS, dur)
	}
}

// TestUsageZeroFallsBack: a stream of 3 text chunks whose usage says 0
// completion tokens (a proxy's placeholder) counts 3 output tokens, as
// vllm bench serve falls back when its usage count is 0 (it counted 0: no
// TPOT, no output throughput); a usage of 5 is taken as it is.
func TestUsageZeroFallsBack(t *testing.T) {
	for _, tc := range []struct{ usage, want int }{{0, 3}, {5, 5}} {
		r := oneStream(t, fmt.Sprintf("usage %d", tc.usage), func(w http.ResponseWriter, r *http.Request) {
			for range 3 {
				fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"a\"}]}\n\n")
			}
			fmt.Fprintf(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":%d}}\n\ndata: [DONE]\n\n", tc.usage)
		}, func(c *Config) { c.MaxTokens = 3 })
		if r.Err != nil {
			t.Fatalf("usage %d: %v", tc.usage, r.Err)
		}
		if got := r.OutputTokens; got != tc.want {
			t.Errorf("usage %d: %d output tokens, want %d", tc.usage, got, tc.want)
		}
	}
}

// TestSummarizeOneTokenRequest: a request of 1 output token has no TPOT
// (vLLM's calculate_metrics and genai-perf take TPOT only from outputs
// of 2 or more) but counts in TTFT, e2e, requests and output tokens.
// Requests (TTFT, e2e, output): (0.1, 0.5, 5) and (0.2, 0.2, 1): TPOT
// 0.4 / 4 = 0.1 only; TTFT p50 0.15; output 6 tokens / 2 s = 3 tok/s.
func TestSummarizeOneTokenRequest(t *testing.T) {
	s := Summarize([]Record{
		{TTFT: 0.1, ITL: []float64{0.1, 0.1, 0.1, 0.1}, E2E: 0.5, OutputTokens: 5},
		{TTFT: 0.2, E2E: 0.2, OutputTokens: 1},
	}, 2*time.Second)
	if math.Abs(float64(s.TPOTP50)-0.1) > 1e-12 || math.Abs(float64(s.TPOTP95)-0.1) > 1e-12 {
		t.Errorf("TPOT p50 %v p95 %v, want 0.1 (the 1-token request has none)", s.TPOTP50, s.TPOTP95)
	}
	if s.Requests != 2 || s.OutputTokens != 6 || s.OutputTokensPerS != 3 || math.Abs(float64(s.TTFTP50)-0.15) > 1e-12 {
		t.Errorf("%+v", s)
	}
}

// TestGaps: the open loop's gaps are gamma-distributed with shape b and
// mean 1/R (vllm bench serve's burstiness): mean 1/R whatever b, and
// coefficient of variation 1/sqrt(b) (the gamma's: sqrt(b)/rate over
// b/rate): 2 at b = 0.25, 1 at 1 (exponential), 0.5 at 4, 0 at +Inf.
func TestGaps(t *testing.T) {
	const n, rate = 40000, 8.0
	for _, tc := range []struct{ b, cv float64 }{{0.25, 2}, {1, 1}, {4, 0.5}, {math.Inf(1), 0}} {
		r := &runner{cfg: Config{Rate: rate, Burstiness: tc.b}, rng: rand.New(rand.NewPCG(1, 2))}
		gap := r.gaps()
		sum, sq := 0.0, 0.0
		for range n {
			g := gap()
			if !(g >= 0) {
				t.Fatalf("b %g: gap %g", tc.b, g)
			}
			sum, sq = sum+g, sq+g*g
		}
		m := sum / n
		cv := math.Sqrt(max(sq/n-m*m, 0)) / m
		if math.Abs(m*rate-1) > 0.05 || math.Abs(cv-tc.cv) > 0.05*max(tc.cv, 1) {
			t.Errorf("burstiness %g: mean gap %.4f s, CV %.3f; want 1/%g = %.4f s, CV %g", tc.b, m, cv, rate, 1/rate, tc.cv)
		}
	}
	// Extreme shapes (the flag takes any float > 0): at 1e306 and 1000
	// req/s the CV is 1e-153, so every gap is 1 ms (a rate parameter of
	// 1e306 x 1000 = +Inf made each 0: the point one burst); at 5e-324
	// and 0.5 req/s (a rate parameter of 2.5e-324, 0 in float64: gonum
	// panicked) a gap is a draw of the smallest shape, 0 all but never,
	// but >= 0 (+Inf allowed: no later arrival).
	steady := (&runner{cfg: Config{Rate: 1000, Burstiness: 1e306}, rng: rand.New(rand.NewPCG(1, 2))}).gaps()
	tiny := (&runner{cfg: Config{Rate: 0.5, Burstiness: 5e-324}, rng: rand.New(rand.NewPCG(1, 2))}).gaps()
	for range 1000 {
		if g := steady(); math.Abs(g-1e-3) > 1e-12 {
			t.Fatalf("burstiness 1e306 at 1000 req/s: gap %g s, want 0.001", g)
		}
		if g := tiny(); !(g >= 0) {
			t.Fatalf("burstiness 5e-324 at 0.5 req/s: gap %g s, want >= 0", g)
		}
	}
	if err := (&Config{Rate: 1, Burstiness: -1}).defaults(); err == nil || !strings.Contains(err.Error(), "burstiness -1: want > 0") {
		t.Errorf("burstiness -1: %v", err)
	}
}

// TestGoodputCount works vllm bench serve's goodput by hand: a request is
// good when it meets every SLO given (TPOT 0 for one output token); a
// failed request never is. SLO TTFT <= 0.2 s and TPOT <= 0.03 s over:
//
//	TTFT 0.1, TPOT (0.16-0.1)/3 = 0.02        good
//	TTFT 0.3                                  not (TTFT)
//	TTFT 0.15, TPOT (0.35-0.15)/4 = 0.05      not (TPOT)
//	TTFT 0.05, one token: TPOT 0              good
//	an error                                  not
//
// 2 good over 4 s: 0.5 per second. With e2el <= 0.1 s as well, only the
// one-token request (e2e 0.05) is.
func TestGoodputCount(t *testing.T) {
	recs := []Record{
		{TTFT: 0.1, E2E: 0.16, OutputTokens: 4},
		{TTFT: 0.3, E2E: 0.34, OutputTokens: 2},
		{TTFT: 0.15, E2E: 0.35, OutputTokens: 5},
		{TTFT: 0.05, E2E: 0.05, OutputTokens: 1},
		{Err: context.DeadlineExceeded},
	}
	g := Goodput{TTFT: 0.2, TPOT: 0.03}
	if r := g.Count(recs, 4*time.Second); r.Requests != 2 || r.RequestsPerS != 0.5 || r.SLO != g {
		t.Errorf("%+v, want 2 good, 0.5/s", r)
	}
	g.E2E = 0.1
	if r := g.Count(recs, 4*time.Second); r.Requests != 1 {
		t.Errorf("with e2el 0.1 s: %+v, want 1 good", r)
	}
	s := SummarizeRun(Config{Rate: 2, Goodput: &g}, Point{Records: recs, Duration: 4 * time.Second})
	if s.Goodput == nil || s.Goodput.Requests != 1 || s.Rate != 2 || s.Burstiness != 1 {
		t.Errorf("SummarizeRun: %+v", s)
	}
	if s := SummarizeRun(Config{Concurrency: 2}, Point{Records: recs, Duration: 4 * time.Second}); s.Goodput != nil || s.Burstiness != 0 {
		t.Errorf("no goodput, closed loop: %+v", s)
	}
}

// TestMaxConcurrency: the open loop holds an arrival that finds every slot
// taken (vllm bench serve's --max-concurrency). 40 arrivals 5 ms apart
// (--burstiness inf at 200 req/s), each answered after 200 ms, 4 slots:
// the first 4 are sent on time (5-20 ms); the 5th, due at 25 ms, waits
// for the first to end near 205 ms, and so does every later one: 36 sent
// late, never more than 4 at the server. With 100 slots none is late.
func TestMaxConcurrency(t *testing.T) {
	var now, most atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := now.Add(1)
		defer now.Add(-1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(200 * time.Millisecond)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	for _, tc := range []struct{ slots, late int }{{4, 36}, {100, 0}} {
		most.Store(0)
		cfg := Config{URL: srv.URL, Model: "m", Rate: 200, Burstiness: math.Inf(1), Requests: 40, Duration: 10 * time.Second, Timeout: 5 * time.Second, MaxConcurrency: tc.slots}
		recs, dur, err := Run(context.Background(), cfg)
		if err != nil || len(recs) != 40 {
			t.Fatalf("%d slots: %v, %d records", tc.slots, err, len(recs))
		}
		s := SummarizeRun(cfg, Point{Records: recs, Duration: dur})
		if s.Requests != 40 || s.SentLate != tc.late || s.MaxConcurrency != tc.slots || most.Load() > int64(tc.slots) {
			t.Errorf("%d slots: %d requests, %d late, max_concurrency %d, %d at once at the server; want 40, %d, %d, at most %d",
				tc.slots, s.Requests, s.SentLate, s.MaxConcurrency, most.Load(), tc.late, tc.slots, tc.slots)
		}
		if met := (SLO{TTFTP95: 10}).Meets(s); met != (tc.late == 0) {
			t.Errorf("%d slots: within a 10 s TTFT SLO %v, want %v (a point that sent late did not offer its load)", tc.slots, met, tc.late == 0)
		}
	}
	if err := (&Config{Rate: 1, MaxConcurrency: -1}).defaults(); err == nil || !strings.Contains(err.Error(), "max concurrency -1: want >= 1") {
		t.Errorf("max concurrency -1: %v", err)
	}
}

// TestMaxConcurrencyLateAfterHold: an arrival due while the loop held an
// earlier one for a slot is sent late too, even when a slot is free by the
// time the loop reaches it. 40 arrivals 5 ms apart (5 to 200 ms), 10
// slots, every request answered at 300 ms (or at once after it): the first
// 10 are sent on time; the 11th, due at 55 ms, waits for the first answer
// at 300 ms, and the 12th to 40th, due by 200 ms, cannot be sent before
// the 11th: 30 late, each by at least 300 - 200 = 100 ms. Late was the
// wait inside the slot alone: microseconds for the 12th to 40th (the loop
// reached them behind time), 0 (on time) for one that found a slot the
// 300 ms answers had freed together.
func TestMaxConcurrencyLateAfterHold(t *testing.T) {
	var gate atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(time.Until(time.Unix(0, gate.Load())))
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	cfg := Config{URL: srv.URL, Model: "m", Rate: 200, Burstiness: math.Inf(1), Requests: 40, Duration: 10 * time.Second, Timeout: 5 * time.Second, MaxConcurrency: 10}
	gate.Store(time.Now().Add(300 * time.Millisecond).UnixNano())
	recs, dur, err := Run(context.Background(), cfg)
	if err != nil || len(recs) != 40 {
		t.Fatalf("%v, %d records", err, len(recs))
	}
	for i, r := range recs {
		if wantLate := i >= 10; (r.Late > 0) != wantLate || (wantLate && r.Late < 100*time.Millisecond) {
			t.Errorf("request %d (due at %d ms): late %v, want late %v (by >= 100 ms)", i+1, 5*(i+1), r.Late, wantLate)
		}
	}
	if s := SummarizeRun(cfg, Point{Records: recs, Duration: dur}); s.SentLate != 30 {
		t.Errorf("sent_late %d, want 30", s.SentLate)
	}
}

// TestUnsentFrom: arrivals due within the duration that the open loop
// never sent are said, from the first one's due time. 200 req/s at
// constant gaps (5 ms) for 1.152 s, 4 slots, each answer after 300 ms:
// the arrivals at 5-20 ms are sent on time; 25-40 ms when the first four
// end (about 305-320 ms), 45-60 ms at about 605-620 ms, 65-80 ms at about
// 905-920 ms (230 ms before the end: room for a busy machine); the one
// due at 85 ms waits for a slot until 1205 ms at the earliest, past the
// end: 16 sent (12 of them late), unsent from 0.085 s, and the point is
// within no SLO. With 400 slots every due arrival (5 ms to 1150 ms: 230)
// is sent, unsent is nil.
func TestUnsentFrom(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		time.Sleep(300 * time.Millisecond)
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	cfg := Config{URL: srv.URL, Model: "m", Rate: 200, Burstiness: math.Inf(1), Requests: 0, Duration: 1152 * time.Millisecond, Timeout: 5 * time.Second, MaxConcurrency: 4}
	pt, err := RunPoint(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := SummarizeRun(cfg, pt)
	if s.Requests != 16 || s.SentLate != 12 || s.UnsentFromS == nil || math.Abs(*s.UnsentFromS-0.085) > 1e-9 || (SLO{}).Meets(s) {
		t.Errorf("%d requests, %d late, unsent from %v, meets %v; want 16, 12, 0.085 s, false", s.Requests, s.SentLate, s.UnsentFromS, (SLO{}).Meets(s))
	}
	cfg.MaxConcurrency = 400
	pt, err = RunPoint(context.Background(), cfg)
	// The last, due 2 ms before the end, is sent even when the timer
	// wakes the loop past the end (it was once left out, and not said).
	if s := SummarizeRun(cfg, pt); err != nil || s.Requests != 230 || s.UnsentFromS != nil || s.SentLate != 0 {
		t.Errorf("400 slots: %v, %d requests, unsent from %v, %d late; want 230 (5 ms to 1150 ms), none unsent, none late", err, s.Requests, s.UnsentFromS, s.SentLate)
	}
}

// TestChatReasoningCounts: a reasoning model's chat stream on vLLM since
// its rename of reasoning_content (PR 27752; the old name removed in PR
// 33402) carries its thinking in delta.reasoning: 3 reasoning chunks at
// 100, 150 and 200 ms, then the answer's one content chunk at 400 ms. The
// first token is the first reasoning chunk (TTFT about 100 ms, not 400) and
// all 4 chunks are tokens (3 intervals); reasoning_content, the older name,
// counts alike. delta.reasoning was skipped: TTFT 400 ms, no ITL, and a
// stream of thinking alone failed with no output.
func TestChatReasoningCounts(t *testing.T) {
	for _, field := range []string{"reasoning", "reasoning_content"} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			flush := func(s string) { fmt.Fprint(w, s); w.(http.Flusher).Flush() }
			start := time.Now()
			at := func(d time.Duration) { time.Sleep(time.Until(start.Add(d))) }
			flush("data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n")
			for _, d := range []time.Duration{100, 150, 200} {
				at(d * time.Millisecond)
				flush(fmt.Sprintf("data: {\"choices\":[{\"delta\":{%q:\"hm\"}}]}\n\n", field))
			}
			at(400 * time.Millisecond)
			flush("data: {\"choices\":[{\"delta\":{\"content\":\"yes\"}}]}\n\n")
			flush("data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":4}}\n\ndata: [DONE]\n\n")
		}))
		recs, _, err := Run(context.Background(), Config{URL: srv.URL, Model: "m", Chat: true, Concurrency: 1, Requests: 1,
			Duration: 10 * time.Second, Timeout: 5 * time.Second, MaxTokens: 4, PromptTokens: 4})
		srv.Close()
		if err != nil || len(recs) != 1 || recs[0].Err != nil {
			t.Fatalf("%s: %v, %+v", field, err, recs)
		}
		if r := recs[0]; r.TTFT < 0.09 || r.TTFT > 0.3 || len(r.ITL) != 3 || r.OutputTokens != 4 {
			t.Errorf("%s: TTFT %.3f s, %d intervals, %d tokens; want about 0.1 s, 3, 4", field, r.TTFT, len(r.ITL), r.OutputTokens)
		}
	}
}

// TestBadChunkQuoted: a stream chunk that is not JSON fails the request
// with where it came (after 1 text chunk) and an excerpt of it, so that
// the server's output can be recognised. It said only Go's "invalid
// character 'n' looking for beginning of object key string".
func TestBadChunkQuoted(t *testing.T) {
	r := oneStream(t, "bad chunk", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {not json\n\ndata: [DONE]\n\n")
	}, func(c *Config) { c.MaxTokens = 3 })
	if r.Err == nil {
		t.Fatalf("%+v; want a failed request", r)
	}
	want := "bad stream chunk after 1 text chunks: invalid character 'n' looking for beginning of object key string: {not json"
	if got := r.Err.Error(); got != want {
		t.Errorf("error %q, want %q", got, want)
	}
}

// TestBrokenStreamSaysCutOff: a server that dies mid-answer on a chunked
// stream (vLLM's uvicorn streams chunked) leaves the body without its last
// chunk, or resets the connection: the error says the stream was cut off
// and after how many text chunks, as a clean close does (it read a bare
// "unexpected EOF" or "read tcp ...: connection reset by peer").
func TestBrokenStreamSaysCutOff(t *testing.T) {
	for _, reset := range []bool{false, true} {
		r := oneStream(t, fmt.Sprintf("reset %v", reset), func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"choices\":[{\"text\":\"b\"}]}\n\n")
			w.(http.Flusher).Flush() // chunked: no Content-Length
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			if reset {
				_ = conn.(*net.TCPConn).SetLinger(0) // close sends RST
			}
			conn.Close()
		}, nil)
		if e := r.Err; e == nil || !strings.Contains(e.Error(), "cut off: the connection broke after 2 text chunks, before data: [DONE]") {
			t.Errorf("reset %v: error %v, want the cut-off named with its 2 text chunks", reset, e)
		}
	}
}

// TestDoneThenOpenStream: a server (or a proxy) that sends data: [DONE] but
// keeps the response open held each request's client until --timeout
// while the drain after [DONE] waited for the end of the body: 2 requests
// at concurrency 1 took 2 x 4 s, the throughput a quarter of the server's.
// The answer is complete at [DONE]: both succeed and the run ends within a
// second of drain each.
func TestDoneThenOpenStream(t *testing.T) {
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"choices\":[{\"text\":\"b\"}]}\n\ndata: [DONE]\n\n")
		w.(http.Flusher).Flush()
		select { // the response never ends
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer srv.Close()
	defer close(stop)
	begin := time.Now()
	recs, _, err := Run(context.Background(), Config{URL: srv.URL, Model: "m", Concurrency: 1, Requests: 2,
		Duration: 10 * time.Second, Timeout: 4 * time.Second, MaxTokens: 2, PromptTokens: 4})
	took := time.Since(begin)
	if err != nil || len(recs) != 2 {
		t.Fatalf("%v, %d records", err, len(recs))
	}
	for i, r := range recs {
		if r.Err != nil || r.OutputTokens != 2 {
			t.Errorf("request %d: error %v, %d output tokens; want a success of 2", i, r.Err, r.OutputTokens)
		}
	}
	if took > 6*time.Second { // 2 x 1 s with room for a busy machine, under the 8 s of 2 x the timeout
		t.Errorf("2 requests took %v: each held to its --timeout 4s after [DONE]; want about 2 x the 1 s drain bound", took.Round(time.Millisecond))
	}
}
