package load

import (
	"fmt"
	"net/http"
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
		begin := time.Now()
		r := oneStream(t, fmt.Sprintf("%d chunks", tc.chunks), func(w http.ResponseWriter, r *http.Request) {
			for i := 0; (tc.chunks < 0 || i < tc.chunks) && r.Context().Err() == nil; i++ {
				fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"a\"}]}\n\n")
			}
			fmt.Fprint(w, "data: [DONE]\n\n")
		}, nil)
		took := time.Since(begin)
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
