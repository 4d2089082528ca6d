package load

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestDiscoverModelQuotesServer: GET /v1/models' refusal said its status
// and load's advice alone ("401 Unauthorized (load sent no API key ...)"),
// leaving out what the server said, which a request's error quotes. It
// quotes it as a request's does (bodyexcerpt: the first line, at most 200
// bytes, " ..." after a cut), with a credential the server echoes
// redacted, before the advice: a 401 of vLLM's, a gateway's 403 that
// echoes the key, llama.cpp's 503 while it loads its model (that the
// server is not ready, not to give --served-model-name), and a 404
// whose one line of 300 bytes is cut at 200.
func TestDiscoverModelQuotesServer(t *testing.T) {
	long := strings.Repeat("x", 300)
	for _, tc := range []struct {
		name   string
		status int
		body   string
		header http.Header
		want   string
	}{
		{"vLLM's 401", 401, `{"error":"Unauthorized"}`, nil,
			`/v1/models: 401 Unauthorized: {"error":"Unauthorized"} (load sent no API key: give the server's key in the environment variable OPENAI_API_KEY`},
		{"a gateway's 403 echoing the key", 403, "forbidden: key gw-5e1f07 is not allowed here\n", http.Header{"X-Api-Key": {"gw-5e1f07"}},
			`/v1/models: 403 Forbidden: forbidden: key [redacted] is not allowed here (`},
		{"llama.cpp loading", 503, `{"error":{"message":"Loading model","type":"unavailable_error","code":503}}`, nil,
			`/v1/models: 503 Service Unavailable: {"error":{"message":"Loading model","type":"unavailable_error","code":503}} (the server is not ready: llama.cpp's answers 503 while it loads the model`},
		{"a long line", 404, long, nil,
			"/v1/models: 404 Not Found: " + long[:200] + " ... (give --served-model-name)"},
		{"the status alone", 500, "Internal Server Error", nil,
			"/v1/models: 500 Internal Server Error (give --served-model-name)"},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(tc.status)
			_, _ = w.Write([]byte(tc.body))
		}))
		_, err := DiscoverModel(context.Background(), http.DefaultClient, srv.URL, tc.header, nil)
		srv.Close()
		if err == nil || !strings.HasPrefix(err.Error(), "load: GET "+srv.URL+tc.want) || strings.Contains(err.Error(), "gw-5e1f07") {
			t.Errorf("%s: %v; want it starting %q", tc.name, err, "load: GET "+srv.URL+tc.want)
		}
	}
}
