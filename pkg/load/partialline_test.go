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
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
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
		}))
		recs, _, err := Run(context.Background(), Config{URL: srv.URL, Model: "m", Concurrency: 1, Requests: 1,
			Duration: 10 * time.Second, Timeout: time.Second, MaxTokens: 4, PromptTokens: 4})
		srv.Close()
		if err != nil || len(recs) != 1 {
			t.Fatalf("hang %v: %v, %d records", tc.hang, err, len(recs))
		}
		if e := recs[0].Err; e == nil || !strings.Contains(e.Error(), tc.want) {
			t.Errorf("hang %v: error %v; want %q", tc.hang, e, tc.want)
		}
	}
}
