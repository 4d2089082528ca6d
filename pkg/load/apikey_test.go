package load

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/fleet/fleettest"
)

// TestAPIKeySent: a server started with --api-key (or a gateway that asks
// for a key) answered every request of load 401, and GET /v1/models too,
// whose failure said to give --served-model-name, which did not help.
// With Config.Header the key goes with /v1/models and every request: the
// model is found and 3 requests of 8 output tokens succeed (the fleet
// generates max_tokens: 24 output tokens). A key in another header (a
// gateway's X-Api-Key) likewise.
func TestAPIKeySent(t *testing.T) {
	for _, tc := range []struct{ name, value string }{
		{"Authorization", "Bearer sk-test-5f3a9c"},
		{"X-Api-Key", "gw-7e21b0"},
	} {
		base := fleettest.KeyGateway(t, tc.name, tc.value, false)
		h := http.Header{}
		h.Set(tc.name, tc.value)
		recs, dur, err := Run(t.Context(), Config{URL: base, Concurrency: 1, Requests: 3, PromptTokens: 16, MaxTokens: 8,
			Duration: 30 * time.Second, Timeout: 10 * time.Second, Header: h})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		s := Summarize(recs, dur)
		if s.Requests != 3 || s.Errors != 0 || s.OutputTokens != 24 {
			t.Errorf("%s: %d requests, %d errors (%s), %d output tokens; want 3, 0, 24", tc.name, s.Requests, s.Errors, s.FirstError, s.OutputTokens)
		}
		if n, err := MaxModelLen(t.Context(), http.DefaultClient, base, "", h, nil); err != nil || n == 0 {
			t.Errorf("%s: MaxModelLen with the key = %d, %v; want the fleet's max_model_len", tc.name, n, err)
		}
		if n, err := MaxModelLen(t.Context(), http.DefaultClient, base, "", nil, nil); n != 0 || err == nil || !strings.Contains(err.Error(), "/v1/models: 401 Unauthorized") {
			t.Errorf("%s: MaxModelLen without the key = %d, %v; want 0 and the 401 (refused)", tc.name, n, err)
		}
	}
}

// TestAPIKeyRefusedSaysHow: without a key, GET /v1/models' 401 says how to
// give one (it said to give --served-model-name), as does a request's 401
// when the model is given, each after the server's message; a key the
// server refuses is said so, and a key a gateway echoes in its answer is
// not repeated in the error.
func TestAPIKeyRefusedSaysHow(t *testing.T) {
	const key = "sk-secret-91c4d2"
	base := fleettest.KeyGateway(t, "Authorization", "Bearer "+key, true)
	_, err := DiscoverModel(t.Context(), http.DefaultClient, base, nil, nil)
	if want := `401 Unauthorized: {"error":"Unauthorized: Authorization: "} (load sent no API key: give the server's key in the environment variable OPENAI_API_KEY`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("discovery without a key: %v; want %q", err, want)
	}
	recs, _, err := Run(t.Context(), Config{URL: base, Model: "m", Concurrency: 1, Requests: 1, Timeout: 10 * time.Second})
	if want := `401 Unauthorized: {"error":"Unauthorized: Authorization: "} (load sent no API key`; err != nil || len(recs) != 1 || recs[0].Err == nil || !strings.HasPrefix(recs[0].Err.Error(), want) {
		t.Errorf("request without a key: %v, %+v; want an error starting %q", err, recs, want)
	}
	wrong := http.Header{"Authorization": {"Bearer sk-wrong-0b77e1"}}
	_, err = DiscoverModel(t.Context(), http.DefaultClient, base, wrong, nil)
	if want := `401 Unauthorized: {"error":"Unauthorized: Authorization: [redacted]"} (the server refused the credentials load sent (Authorization: Bearer; values never shown)`; err == nil || strings.Contains(err.Error(), "sk-wrong") || !strings.Contains(err.Error(), want) {
		t.Errorf("discovery with a wrong key: %v; want %q", err, want)
	}
	recs, _, err = Run(t.Context(), Config{URL: base, Model: "m", Concurrency: 1, Requests: 1, Timeout: 10 * time.Second, Header: wrong})
	if err != nil || len(recs) != 1 || recs[0].Err == nil {
		t.Fatalf("request with a wrong key: %v, %+v", err, recs)
	}
	got := recs[0].Err.Error()
	if want := `401 Unauthorized: {"error":"Unauthorized: Authorization: [redacted]"} (the server refused the credentials load sent (Authorization: Bearer;`; !strings.HasPrefix(got, want) || strings.Contains(got, "sk-wrong") {
		t.Errorf("request with a wrong key: %q; want it starting %q, without the key", got, want)
	}
}

// TestCredentials: the values kept out of errors are those of credential
// headers, whole and without their scheme; a header that is no credential
// (a tenant's name) is shown.
func TestCredentials(t *testing.T) {
	h := http.Header{"Authorization": {"Bearer abc123"}, "X-Api-Key": {"k9"}, "X-Tenant": {"team-a"}}
	got := Credentials(h)
	want := []string{"Bearer abc123", "abc123", "k9"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("Credentials = %q, want %q", got, want)
	}
}
