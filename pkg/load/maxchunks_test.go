package load

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestStreamPastMaxTokensFails: a server that ignores max_tokens and
// streams text until the client goes kept every interval of the stream
// (a float a chunk) until --timeout: 4 clients against a loopback server
// streaming as fast as it could held 165 MB after 10 s, so the default 5
// minutes at 64 clients ran out of memory. A request of max_tokens 4
// streams at most 2 x 4 + 16 = 24 text chunks (a token's text split in
// two allowed); the 25th fails it at once, long before the 5 s timeout.
// 24 chunks and data: [DONE] is still a success of 24 chunks.
func TestStreamPastMaxTokensFails(t *testing.T) {
	for _, tc := range []struct {
		chunks int // -1: until the client goes
		want   string
	}{{-1, "the server streamed more than 24 text chunks for max_tokens 4: it does not honour max_tokens"}, {24, ""}} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			for i := 0; (tc.chunks < 0 || i < tc.chunks) && r.Context().Err() == nil; i++ {
				fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"a\"}]}\n\n")
			}
			fmt.Fprint(w, "data: [DONE]\n\n")
		}))
		begin := time.Now()
		recs, _, err := Run(context.Background(), Config{URL: srv.URL, Model: "m", Concurrency: 1, Requests: 1,
			Duration: 10 * time.Second, Timeout: 5 * time.Second, MaxTokens: 4, PromptTokens: 4})
		took := time.Since(begin)
		srv.Close()
		if err != nil || len(recs) != 1 {
			t.Fatalf("%d chunks: %v, %d records", tc.chunks, err, len(recs))
		}
		r := recs[0]
		switch {
		case tc.want != "" && (r.Err == nil || !strings.Contains(r.Err.Error(), tc.want)):
			t.Errorf("endless stream: error %v, want %q", r.Err, tc.want)
		case tc.want != "" && took > 3*time.Second:
			t.Errorf("endless stream: took %v; want it cut at the 25th chunk, not at the 5 s timeout", took.Round(time.Millisecond))
		case tc.want == "" && (r.Err != nil || r.OutputTokens != 24):
			t.Errorf("24 chunks: error %v, %d output tokens; want a success of 24", r.Err, r.OutputTokens)
		}
	}
}
