package load

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestRedirectNotFollowed: a server that redirects /v1/completions (302,
// as a proxy moving the API under /llm does) made Go's client repeat the
// POST as a GET, which the server answered 405: every request failed with
// "405 Method Not Allowed", the redirect nowhere said. And a 307 to
// another host would have sent the load past CheckLoopback. Load follows
// no redirect: each request fails naming where the server redirects and
// the base URL to give, and the target gets no request. /v1/models
// likewise when the model is discovered.
func TestRedirectNotFollowed(t *testing.T) {
	var moved atomic.Int64 // requests that reached the redirect's target
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/llm"+r.URL.Path, http.StatusFound)
	})
	mux.HandleFunc("/llm/", func(w http.ResponseWriter, r *http.Request) {
		moved.Add(1)
		http.Error(w, "method "+r.Method, http.StatusMethodNotAllowed)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	recs, _, err := Run(context.Background(), Config{URL: srv.URL, Model: "m", Concurrency: 1, Requests: 2,
		Duration: 10 * time.Second, Timeout: 5 * time.Second, MaxTokens: 4, PromptTokens: 4})
	if err != nil || len(recs) != 2 {
		t.Fatalf("%v, %d records", err, len(recs))
	}
	want := fmt.Sprintf("302 Found: the server redirects to %s/llm/v1/completions, which load does not follow", srv.URL)
	for i, r := range recs {
		if r.Err == nil || !strings.Contains(r.Err.Error(), want) || !strings.Contains(r.Err.Error(), "give "+srv.URL+"/llm as the URL") {
			t.Errorf("request %d: error %v; want %q and the base URL %s/llm", i, r.Err, want, srv.URL)
		}
	}

	_, _, err = Run(context.Background(), Config{URL: srv.URL, Concurrency: 1, Requests: 1, Duration: 10 * time.Second})
	if want := fmt.Sprintf("load: GET %s/v1/models: 302 Found: the server redirects to %s/llm/v1/models", srv.URL, srv.URL); err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("discovering the model: error %v; want %q", err, want)
	}
	if n := moved.Load(); n != 0 {
		t.Errorf("the redirect's target got %d requests; want none", n)
	}
}
