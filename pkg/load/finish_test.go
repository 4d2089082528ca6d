package load

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// TestAbortedStreamFails: vLLM ends a request it aborts (pause_generation
// in abort mode, a shutdown) with finish_reason "abort" (FinishReason
// ABORT; "error" likewise), then its usage and data: [DONE]. Such a
// stream, 2 text chunks of max_tokens 4, counted as a success of 2 tokens,
// its short e2e pulling the quantiles down. It fails naming the reason; a
// finish_reason of length (a string, or an object as some servers send)
// is the success it was.
func TestAbortedStreamFails(t *testing.T) {
	for _, tc := range []struct {
		finish string
		want   string
	}{
		{`"abort"`, `the server ended the request with finish_reason "abort" after 2 text chunks`},
		{`"error"`, `the server ended the request with finish_reason "error" after 2 text chunks`},
		{`"length"`, ""},
		{`{"type":"length"}`, ""},
	} {
		r := oneStream(t, "finish_reason "+tc.finish, func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, "data: {\"choices\":[{\"index\":0,\"text\":\"a\"}]}\n\ndata: {\"choices\":[{\"index\":0,\"text\":\"b\"}]}\n\n")
			fmt.Fprintf(w, "data: {\"choices\":[{\"index\":0,\"text\":\"\",\"finish_reason\":%s}]}\n\n", tc.finish)
			fmt.Fprint(w, "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n")
		}, nil)
		switch {
		case tc.want != "" && (r.Err == nil || !strings.Contains(r.Err.Error(), tc.want)):
			t.Errorf("finish_reason %s: error %v; want %q", tc.finish, r.Err, tc.want)
		case tc.want == "" && (r.Err != nil || r.OutputTokens != 2):
			t.Errorf("finish_reason %s: error %v, %d output tokens; want a success of 2", tc.finish, r.Err, r.OutputTokens)
		}
	}
}
