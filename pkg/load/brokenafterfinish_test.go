package load

import (
	"fmt"
	"net"
	"net/http"
	"strings"
	"testing"
)

// TestBrokenAfterFinish: a stream whose last text chunk gave its
// finish_reason and whose connection then broke before data: [DONE] (a
// reset, or the chunked body's end missing) failed as "cut off ... mid-answer",
// though the text was whole. vllm bench serve counts it failed all the
// same (aiohttp raises ClientPayloadError from the body's read, and its
// request function marks any exception success=False), as do genai-perf
// (perf_analyzer's curl reports an error, which its OpenAI client turns
// into HTTP code 400, a failed request) and AIPerf (any exception is the
// record's error): it stays a failure, said as what it is. A break with
// no finish_reason is still cut off mid-answer.
func TestBrokenAfterFinish(t *testing.T) {
	chunk := func(text, finish string) string {
		return fmt.Sprintf("data: {\"choices\":[{\"index\":0,\"text\":%q,\"finish_reason\":%s}]}\n\n", text, finish)
	}
	for _, tc := range []struct {
		name, stream string
		reset        bool
		want         string
	}{
		{"reset after finish_reason", chunk("a", "null") + chunk("b", "null") + chunk("c", `"length"`), true,
			"the connection broke after the answer's finish_reason (3 text chunks), before data: [DONE]: a failure, as vllm bench serve and genai-perf count a broken stream, though its text came whole"},
		{"chunked end missing after usage", chunk("a", "null") + chunk("b", `"stop"`) + "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":4,\"completion_tokens\":2}}\n\n", false,
			"the connection broke after the answer's finish_reason (2 text chunks), before data: [DONE]: a failure"},
		{"reset mid-answer", chunk("a", "null") + chunk("b", "null"), true,
			"cut off: the connection broke after 2 text chunks, before data: [DONE] (the server closed or reset it mid-answer)"},
	} {
		r := oneStream(t, tc.name, func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, tc.stream)
			w.(http.Flusher).Flush() // chunked: the body's last chunk is never written
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			if tcp, ok := conn.(*net.TCPConn); ok && tc.reset {
				_ = tcp.SetLinger(0) // close with a RST
			}
			conn.Close()
		}, func(c *Config) { c.MaxTokens = 3 })
		if e := r.Err; e == nil || !strings.HasPrefix(e.Error(), tc.want) {
			t.Errorf("%s: error %v; want it starting %q", tc.name, e, tc.want)
		}
	}
}
