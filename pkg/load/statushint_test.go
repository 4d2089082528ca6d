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
// what to do, after the server's message, as does a 503 (a server still
// loading its model, or a gateway without one ready). A 500 is the
// server's own failure and has no hint.
func TestStatusSaysWhatToDo(t *testing.T) {
	for _, tc := range []struct {
		status int
		want   string
	}{
		{401, `401 Unauthorized: {"error":"Unauthorized"} (load sent no API key: give the server's key in the environment variable OPENAI_API_KEY`},
		{404, `404 Not Found: {"error":"Unauthorized"} (check the URL's path, --endpoint and --served-model-name`},
		{429, `429 Too Many Requests: {"error":"Unauthorized"} (the server or a gateway before it limits the request rate`},
		{500, `500 Internal Server Error: {"error":"Unauthorized"}`},
		{503, `503 Service Unavailable: {"error":"Unauthorized"} (the server or a gateway before it is unavailable: not ready yet (llama.cpp's server while it loads the model`},
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

// TestRefusalNamesCredential: a 401 or 403 said "the server refused the
// request with the header load sent (Authorization, from OPENAI_API_KEY,
// --header or the URL's user:password)": which of the three, and whether
// as Bearer or Basic, was left to guess. It names each credential sent,
// its scheme and its source, never its value, and what to do about that
// source. Expected texts written from the rules: a vLLM, SGLang or
// llama.cpp --api-key takes Authorization: Bearer KEY only (vLLM compares
// the header with "Bearer " + key; llama.cpp strips "Bearer " or reads
// X-Api-Key), so a Basic or a bare key is told to become Bearer.
func TestRefusalNamesCredential(t *testing.T) {
	const refused = "the server refused the credentials load sent ("
	for _, tc := range []struct {
		name    string
		code    int
		header  http.Header
		sources HeaderSources
		want    string
	}{
		{"OPENAI_API_KEY", 401, http.Header{"Authorization": {"Bearer sk-a1"}}, HeaderSources{"Authorization": FromAPIKey},
			refused + "Authorization: Bearer from OPENAI_API_KEY; values never shown): check that OPENAI_API_KEY holds the key the server was started with (vLLM's, SGLang's or llama.cpp's --api-key) or that its gateway takes"},
		{"the URL's user:password", 401, http.Header{"Authorization": {"Basic dTpzay1hMQ=="}}, HeaderSources{"Authorization": FromURL},
			refused + "Authorization: Basic from the URL's user:password; values never shown): a server started with --api-key (vLLM, SGLang, llama.cpp) takes its key as Authorization: Bearer KEY, not Basic: give the key in OPENAI_API_KEY and the URL without user:password, unless a gateway before the server asks for Basic"},
		{"--header Bearer", 403, http.Header{"Authorization": {"bearer sk-a1"}}, HeaderSources{"Authorization": FromHeaderFlag},
			refused + "Authorization: Bearer from --header; values never shown): check the key given with --header Authorization (it replaces OPENAI_API_KEY's): the server's --api-key, or its gateway's"},
		{"--header, a key alone", 401, http.Header{"Authorization": {"sk-a1"}}, HeaderSources{"Authorization": FromHeaderFlag},
			refused + "Authorization with no scheme from --header; values never shown): a server started with --api-key (vLLM, SGLang, llama.cpp) takes its key as Authorization: Bearer KEY: give the key in OPENAI_API_KEY, or --header 'Authorization: Bearer KEY'"},
		{"--header, an unknown first word", 401, http.Header{"Authorization": {"sk a1"}}, HeaderSources{"Authorization": FromHeaderFlag},
			refused + "Authorization with a scheme load does not name from --header; values never shown): a server started with --api-key (vLLM, SGLang, llama.cpp) takes its key as Authorization: Bearer KEY: give the key in OPENAI_API_KEY, or --header 'Authorization: Bearer KEY'"},
		{"a gateway's header and a tenant", 403, http.Header{"X-Api-Key": {"gw-a1"}, "X-Tenant": {"team-a"}}, HeaderSources{"X-Api-Key": FromHeaderFlag, "X-Tenant": FromHeaderFlag},
			refused + "X-Api-Key from --header; values never shown): check the value given with --header X-Api-Key, and that the server or its gateway reads that header"},
		{"no credential, a tenant", 401, http.Header{"X-Tenant": {"team-a"}}, HeaderSources{"X-Tenant": FromHeaderFlag}, noKeyHint},
		{"sources unknown", 401, http.Header{"Authorization": {"Bearer sk-a1"}}, nil,
			refused + "Authorization: Bearer; values never shown): check that the key is the one the server (vLLM's --api-key) or its gateway takes"},
		{"a 404 is no refusal", 404, http.Header{"Authorization": {"Bearer sk-a1"}}, nil, "check the URL's path, --endpoint and --served-model-name (GET /v1/models lists the names)"},
	} {
		got := statusHint(tc.code, tc.header, tc.sources)
		if got != tc.want || strings.Contains(got, "a1") {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}

// TestRedactKeepsOwnAdvice: a server that echoes a short key it refused
// ("k") has it redacted in its own words, while load's advice after them
// reads as written; the key replaced everywhere read "Invalid API
// [redacted]ey" and "chec[redacted] the [redacted]ey given with --header".
func TestRedactKeepsOwnAdvice(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, `{"error":"Invalid API key: got `+r.Header.Get("Authorization")+`"}`, http.StatusUnauthorized)
	}))
	defer srv.Close()
	header := http.Header{"Authorization": {"Bearer k"}}
	_, err := DiscoverModel(t.Context(), srv.Client(), srv.URL, header, HeaderSources{"Authorization": FromHeaderFlag})
	want := `401 Unauthorized: {"error":"Invalid API [redacted]ey: got [redacted]"} (the server refused the credentials load sent (Authorization: Bearer from --header; values never shown): check the key given with --header Authorization (it replaces OPENAI_API_KEY's): the server's --api-key, or its gateway's)`
	if err == nil || !strings.HasSuffix(err.Error(), want) {
		t.Errorf("got %v\nwant it to end %q", err, want)
	}
}
