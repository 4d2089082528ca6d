package load

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestEchoedKeyCutRedacted: a server that echoes the key it refused, the
// key across the 200th byte of its message (bodyexcerpt.Max, where the
// quote is cut), showed the key's first bytes: the quote was cut first
// and redacted after, when the whole key was no longer there to match.
// The message: 190 "x", " key ", then the key gw-5e1f07aa (11 bytes,
// bytes 195 to 205). Redacted first, the line is 190 "x", " key ",
// "[redacted]" (bytes 195 to 204), ...: its first 200 bytes end in
// "[reda", then " ...". Said so for GET /v1/models' 403, a request's 403,
// and a request whose stream ends in an error event with that message.
func TestEchoedKeyCutRedacted(t *testing.T) {
	const key = "gw-5e1f07aa"
	msg := strings.Repeat("x", 190) + " key " + key + " is not allowed here"
	want := strings.Repeat("x", 190) + " key [reda ..."
	h := http.Header{"X-Api-Key": {key}}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/completions" && r.URL.Query().Get("stream") == "" && r.Header.Get("X-Stream") != "" {
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = w.Write([]byte("event: error\ndata: {\"error\":{\"message\":\"" + msg + "\"}}\n\n"))
			return
		}
		w.WriteHeader(http.StatusForbidden)
		_, _ = w.Write([]byte(msg + "\n"))
	}))
	defer srv.Close()
	_, err := DiscoverModel(context.Background(), http.DefaultClient, srv.URL, h, nil)
	if err == nil || !strings.Contains(err.Error(), "403 Forbidden: "+want+" (") || strings.Contains(err.Error(), "gw-5e") {
		t.Errorf("discovery: %v; want the quote %q and no part of the key", err, want)
	}
	for _, stream := range []bool{false, true} {
		hh := h.Clone()
		if stream {
			hh.Set("X-Stream", "1")
		}
		recs, _, err := Run(t.Context(), Config{URL: srv.URL, Model: "m", Concurrency: 1, Requests: 1, Timeout: 10 * time.Second, Header: hh})
		if err != nil || len(recs) != 1 || recs[0].Err == nil {
			t.Fatalf("stream %v: %v, %+v", stream, err, recs)
		}
		if got := recs[0].Err.Error(); !strings.Contains(got, ": "+want) || strings.Contains(got, "gw-5e") {
			t.Errorf("stream %v: %q; want the quote %q and no part of the key", stream, got, want)
		}
	}
}
