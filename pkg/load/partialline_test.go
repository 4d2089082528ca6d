package load

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestBrokenMidLineSaysWhatBrokeIt: a stream broken off in the middle of a
// line (the server hangs there until --timeout, or closes the connection)
// left the line's start to bufio.Scanner's last token, and the request
// failed as "bad stream chunk after 1 text chunks: unexpected end of JSON
// input", a malformed server, when it timed out or was cut off. Each is
// said as what it is.
func TestBrokenMidLineSaysWhatBrokeIt(t *testing.T) {
	for _, tc := range []struct {
		hang bool
		want string
	}{
		{true, "timed out: the stream did not end within the timeout of 1s (--timeout)"},
		{false, "cut off: the connection broke after 1 text chunks, before data: [DONE]"},
	} {
		r := oneStream(t, fmt.Sprintf("hang %v", tc.hang), func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"a\"}]}\n\ndata: {\"choices\":[{\"te")
			w.(http.Flusher).Flush()
			if tc.hang {
				<-r.Context().Done()
				return
			}
			conn, _, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			conn.Close()
		}, func(c *Config) { c.Timeout = time.Second })
		if e := r.Err; e == nil || !strings.Contains(e.Error(), tc.want) {
			t.Errorf("hang %v: error %v; want %q", tc.hang, e, tc.want)
		}
	}
}
