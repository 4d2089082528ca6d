package load

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// oneStream runs one request against a loopback server that answers it as
// a text/event-stream, write writing the body (or breaking it off), and
// returns the request's record. The request is Config's completions
// request of a 4-token prompt for max_tokens 4 to model "m" with a 5 s
// timeout, as set changes it (nil: as is). It fails t, naming what, unless
// Run returns no error and one record.
func oneStream(t *testing.T, what string, write http.HandlerFunc, set func(*Config)) Record {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		write(w, r)
	}))
	defer srv.Close()
	cfg := Config{URL: srv.URL, Model: "m", Concurrency: 1, Requests: 1,
		Duration: 10 * time.Second, Timeout: 5 * time.Second, MaxTokens: 4, PromptTokens: 4}
	if set != nil {
		set(&cfg)
	}
	recs, _, err := Run(context.Background(), cfg)
	if err != nil || len(recs) != 1 {
		t.Fatalf("%s: %v, %d records", what, err, len(recs))
	}
	return recs[0]
}
