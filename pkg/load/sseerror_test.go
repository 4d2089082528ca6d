package load

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestSSEErrorLineIsServerError: llama.cpp's server before its PR 16109
// (September 2025) wrote an error during a stream as an SSE field of its
// own, `error: {"code":400,"message":...,"type":...}`, then (on its
// OpenAI-compatible endpoints) data: [DONE]. load read only data: lines:
// before any text the request failed "no output: the stream ended without
// a chunk that carries text", after 2 text chunks it counted a success of
// 2 tokens, and without the [DONE] (llama.cpp's own /completion) it was
// "cut off". Later llama.cpp writes data: {"error": {...}}, as vLLM does;
// an SSE `event: error` names the data line after it an error (the
// event-stream standard's way, which AIPerf reads). Each fails as the
// server's error, with its message and after how many text chunks.
func TestSSEErrorLineIsServerError(t *testing.T) {
	const text = "data: {\"choices\":[{\"index\":0,\"text\":\"a\",\"finish_reason\":null}]}\n\n"
	const ctxErr = `{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error"}`
	for _, tc := range []struct {
		name, stream, want string
	}{
		{"error: line first", "error: " + ctxErr + "\n\ndata: [DONE]\n\n",
			"the server streamed an error after 0 text chunks: the request exceeds the available context size, try increasing it"},
		{"error: line after 2 chunks", text + text + "error: " + ctxErr + "\n\ndata: [DONE]\n\n",
			"the server streamed an error after 2 text chunks: the request exceeds the available context size, try increasing it"},
		{"error: line without [DONE]", text + "error: " + ctxErr + "\n\n",
			"the server streamed an error after 1 text chunks: the request exceeds the available context size, try increasing it"},
		{"error: line, a string", text + "error: \"slot unavailable\"\n\n",
			"the server streamed an error after 1 text chunks: slot unavailable"},
		{"data: error object", text + `data: {"error":{"code":500,"message":"Failed to decode","type":"server_error"}}` + "\n\ndata: [DONE]\n\n",
			"the server streamed an error after 1 text chunks: Failed to decode"},
		{"event: error", text + "event: error\ndata: {\"message\":\"engine dead\"}\n\n",
			"the server streamed an error after 1 text chunks: engine dead"},
		{"event: error, no JSON", text + "event: error\ndata: engine dead\n\n",
			"the server streamed an error after 1 text chunks: engine dead"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprint(w, tc.stream)
		}))
		recs, _, err := Run(context.Background(), Config{URL: srv.URL, Model: "m", Concurrency: 1, Requests: 1,
			Duration: 10 * time.Second, Timeout: 5 * time.Second, MaxTokens: 4, PromptTokens: 4})
		srv.Close()
		if err != nil || len(recs) != 1 {
			t.Fatalf("%s: %v, %d records", tc.name, err, len(recs))
		}
		if e := recs[0].Err; e == nil || e.Error() != tc.want {
			t.Errorf("%s: error %v; want %q", tc.name, e, tc.want)
		}
	}
}

// TestSSEEventOtherThanError: an SSE event of another name (a keep-alive
// ping's event: ping, SGLang's and others' comments) before a data line
// leaves that line a chunk like any other: 2 text chunks and [DONE] are a
// success of 2 tokens.
func TestSSEEventOtherThanError(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, ": ping\n\nevent: message\ndata: {\"choices\":[{\"text\":\"a\"}]}\n\nevent: ping\n\ndata: {\"choices\":[{\"text\":\"b\"}]}\n\ndata: [DONE]\n\n")
	}))
	defer srv.Close()
	recs, _, err := Run(context.Background(), Config{URL: srv.URL, Model: "m", Concurrency: 1, Requests: 1,
		Duration: 10 * time.Second, Timeout: 5 * time.Second, MaxTokens: 4, PromptTokens: 4})
	if err != nil || len(recs) != 1 || recs[0].Err != nil || recs[0].OutputTokens != 2 || len(recs[0].ITL) != 1 {
		t.Fatalf("%v, %+v; want a success of 2 tokens, 1 interval", err, recs)
	}
}
