package load

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"
)

// TestFiguresOfKnownServer checks a point's figures end to end, over HTTP,
// against a server whose timings are set, worked by hand from the
// definitions of vllm bench serve (calculate_metrics) and genai-perf.
//
// Each answer: an empty chunk at once (a chat role header's like: no text),
// the first text at 200 ms, 4 more 50 ms apart, a usage chunk of 7 prompt
// and 5 completion tokens, data: [DONE]. The second request is answered
// 500. At concurrency 1 and 4 requests:
//
//   - successful 3, errors 1 (the 500 in no quantile, no token count);
//   - TTFT 0.2 s (the empty chunk not counted: it would read about 0);
//   - ITL 0.05 s, 4 intervals a request, 12 pooled;
//   - e2e 0.4 s; TPOT (0.4 - 0.2) / (5 - 1) = 0.05 s;
//   - output tokens 3 x 5 = 15 (usage, not the 5 text chunks by chance:
//     the usage says 5 too), prompt 3 x 7 = 21;
//   - duration: 3 answers of 0.4 s back to back and the 500's instant,
//     1.2 s: output 15 / 1.2 = 12.5 tokens/s, 3 / 1.2 = 2.5 requests/s,
//     (21 + 15) / 1.2 = 30 total tokens/s;
//   - goodput at TTFT <= 0.4 s and TPOT <= 0.2 s (0.2 and 0.05 with room
//     for a busy machine): all 3 (2.5/s); at TTFT <= 150 ms none.
//
// Timers wake late, never early: each figure is checked at least its value
// (less 1 ms of clock) and at most its value plus room for a busy machine.
func TestFiguresOfKnownServer(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 2 {
			http.Error(w, "boom", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		send := func(s string) { fmt.Fprintf(w, "data: %s\n\n", s); w.(http.Flusher).Flush() }
		send(`{"choices":[{"index":0,"text":""}]}`)
		time.Sleep(200 * time.Millisecond)
		send(`{"choices":[{"index":0,"text":"a"}]}`)
		for range 4 {
			time.Sleep(50 * time.Millisecond)
			send(`{"choices":[{"index":0,"text":"b"}]}`)
		}
		send(`{"choices":[],"usage":{"prompt_tokens":7,"completion_tokens":5}}`)
		send("[DONE]")
	}))
	defer srv.Close()
	cfg := Config{URL: srv.URL, Model: "m", Concurrency: 1, Requests: 4, Duration: time.Minute, Timeout: 10 * time.Second,
		MaxTokens: 5, PromptTokens: 4}
	p, err := RunPoint(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	s := Summarize(p.Records, p.Duration)
	if s.Requests != 3 || s.Errors != 1 || s.OutputTokens != 15 || s.PromptTokens != 21 {
		t.Fatalf("requests %d errors %d output %d prompt %d; want 3, 1, 15, 21", s.Requests, s.Errors, s.OutputTokens, s.PromptTokens)
	}
	const slack = 0.15 // a busy machine's late wake-ups, over a request's 5 sleeps
	within := func(name string, got Float, want, room float64) {
		t.Helper()
		if v := float64(got); !(v >= want-0.001 && v <= want+room) {
			t.Errorf("%s %.4f s; want %.3f s (to %.3f s on a busy machine)", name, v, want, want+room)
		}
	}
	within("TTFT p50", s.TTFTP50, 0.2, slack)
	within("TTFT p95", s.TTFTP95, 0.2, slack)
	within("TTFT mean", s.TTFTMean, 0.2, slack)
	within("ITL p50", s.ITLP50, 0.05, slack)
	within("ITL mean", s.ITLMean, 0.05, slack)
	within("TPOT p50", s.TPOTP50, 0.05, slack)
	within("e2e p50", s.E2EP50, 0.4, slack)
	within("e2e mean", s.E2EMean, 0.4, slack)
	within("duration", Float(s.DurationS), 1.2, 3*slack)
	// Throughputs are counts over the duration: checked against the
	// measured duration's own figures, and the duration above.
	d := s.DurationS
	if s.OutputTokensPerS != 15/d || s.RequestsPerS != 3/d || s.TotalTokensPerS != 36/d {
		t.Errorf("output %v req %v total %v per s over %v s; want 15, 3 and 36 over it", s.OutputTokensPerS, s.RequestsPerS, s.TotalTokensPerS, d)
	}
	for _, tc := range []struct {
		slo  Goodput
		good int
	}{{Goodput{TTFT: 0.4, TPOT: 0.2}, 3}, {Goodput{TTFT: 0.15}, 0}} {
		if g := tc.slo.Count(p.Records, p.Duration); g.Requests != tc.good || g.RequestsPerS != float64(tc.good)/d {
			t.Errorf("goodput %+v: %d good, %v/s; want %d", tc.slo, g.Requests, g.RequestsPerS, tc.good)
		}
	}
}
