package load

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
)

// statusServer answers every request with status and body (JSON).
func statusServer(t *testing.T, status int, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// rateLimit is statusHints' 429 advice, as docs/load.md says it.
const rateLimit = "the server or a gateway before it limits the request rate: what is measured is the limit, not the model; " +
	"lift it for the test or load below it"

// TestDiscoverModelRateLimited: a gateway's 429 to GET /v1/models said
// "(give --served-model-name)", which would not help: every request of
// the run gets the 429 too. It gives the rate-limit advice the requests'
// 429 gives.
func TestDiscoverModelRateLimited(t *testing.T) {
	base := statusServer(t, 429, `{"error":"rate limit exceeded"}`)
	_, err := DiscoverModel(context.Background(), http.DefaultClient, base, nil, nil)
	want := "load: GET " + base + `/v1/models: 429 Too Many Requests: {"error":"rate limit exceeded"} (` + rateLimit + ")"
	if err == nil || err.Error() != want {
		t.Errorf("DiscoverModel after a 429: %v\nwant %s", err, want)
	}
}

// TestMaxModelLenSaysWhy: MaxModelLen returned 0 and no error when GET
// /v1/models answered other than 2xx, so --calibrate went on as if the
// server gave no max_model_len. A status every request would get too (a
// 429, a 401 without a key) is an error with statusHint's advice; any
// other (a server or gateway without /v1/models: 404) is
// ErrMaxModelLenUnknown, quoting the status and the server's message, with
// 0; a 200 that is no model list likewise.
func TestMaxModelLenSaysWhy(t *testing.T) {
	for _, tc := range []struct {
		name    string
		status  int
		body    string
		want    string // after "load: GET BASE/v1/models: "
		unknown bool   // errors.Is ErrMaxModelLenUnknown
	}{
		{"a gateway's rate limit", 429, `{"error":"rate limit exceeded"}`,
			`429 Too Many Requests: {"error":"rate limit exceeded"} (` + rateLimit + ")", false},
		{"vLLM's --api-key, no key sent", 401, `{"error":"Unauthorized"}`,
			`401 Unauthorized: {"error":"Unauthorized"} (` + noKeyHint + ")", false},
		{"a gateway without /v1/models", 404, `{"detail":"Not Found"}`,
			`404 Not Found: {"detail":"Not Found"}: the server's max_model_len is unknown`, true},
		{"a server failing it", 500, `{"error":"boom"}`,
			`500 Internal Server Error: {"error":"boom"}: the server's max_model_len is unknown`, true},
		{"a 200 that is no model list", 200, `<html>ok</html>`,
			`not a model list but application/json (invalid character '<' looking for beginning of value): the server's max_model_len is unknown`, true},
	} {
		base := statusServer(t, tc.status, tc.body)
		n, err := MaxModelLen(context.Background(), http.DefaultClient, base, "m", nil, nil)
		want := "load: GET " + base + "/v1/models: " + tc.want
		if n != 0 || err == nil || err.Error() != want || errors.Is(err, ErrMaxModelLenUnknown) != tc.unknown {
			t.Errorf("%s: %d, %v (unknown: %t)\nwant 0, %s (unknown: %t)", tc.name, n, err, errors.Is(err, ErrMaxModelLenUnknown), want, tc.unknown)
		}
	}
	// A model list without max_model_len (llama.cpp's) is no fault: 0, nil.
	base := statusServer(t, 200, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
	if n, err := MaxModelLen(context.Background(), http.DefaultClient, base, "m", nil, nil); n != 0 || err != nil {
		t.Errorf("a list without max_model_len: %d, %v; want 0, nil", n, err)
	}
}
