package load

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestStatusSaysWhatToDo: a 401 (a vLLM started with --api-key), a 404 (a
// wrong model name or path) and a 429 (a gateway's rate limit) failed
// every request with the status and the server's text alone; each says
// what to do, after the server's message. A 500 is the server's own
// failure and has no hint.
func TestStatusSaysWhatToDo(t *testing.T) {
	for _, tc := range []struct {
		status int
		want   string
	}{
		{401, `401 Unauthorized: {"error":"Unauthorized"} (load sent no API key: give the server's key in the environment variable OPENAI_API_KEY`},
		{404, `404 Not Found: {"error":"Unauthorized"} (check the URL's path, --endpoint and --served-model-name`},
		{429, `429 Too Many Requests: {"error":"Unauthorized"} (the server or a gateway before it limits the request rate`},
		{500, `500 Internal Server Error: {"error":"Unauthorized"}`},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(tc.status)
			_, _ = w.Write([]byte(`{"error":"Unauthorized"}`)) // vLLM's --api-key answer, the same body each time
		}))
		recs, _, err := Run(t.Context(), Config{URL: srv.URL, Model: "m", Concurrency: 1, Requests: 1})
		srv.Close()
		if err != nil || len(recs) != 1 || recs[0].Err == nil {
			t.Fatalf("%d: %v, %d records", tc.status, err, len(recs))
		}
		got := recs[0].Err.Error()
		if !strings.HasPrefix(got, tc.want) || (tc.status == 500 && got != tc.want) {
			t.Errorf("%d: error %q; want %q", tc.status, got, tc.want)
		}
	}
}
