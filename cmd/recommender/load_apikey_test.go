package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/infscale/infscale/pkg/fleet/fleettest"
	"github.com/infscale/infscale/pkg/load"
)

// TestLoadAPIKey: load against a server that asks for a key. Without one,
// every request and GET /v1/models were refused (exit 1, "load sends no
// API key"). OPENAI_API_KEY (as vllm bench serve reads it) is sent as
// Authorization: Bearer, the model is found and the point succeeds; a
// gateway's key goes with --header; a wrong key fails saying the header
// was refused. The key is in no output, the JSON's first_error included,
// though the server echoes it.
func TestLoadAPIKey(t *testing.T) {
	const key = "sk-test-4be07d1c"
	base := fleettest.KeyGateway(t, "Authorization", "Bearer "+key, true)
	args := []string{"load", base, "--concurrency", "1", "--requests", "2", "--prompt-tokens", "16", "--max-tokens", "4", "-o", "json", "--progress", "never"}

	t.Setenv("OPENAI_API_KEY", "")
	var out, errb bytes.Buffer
	code := run(t.Context(), args, strings.NewReader(""), &out, &errb)
	if want := `401 Unauthorized: {"error":"Unauthorized: Authorization: "} (load sent no API key: give the server's key in the environment variable OPENAI_API_KEY`; code != 1 || !strings.Contains(errb.String(), want) {
		t.Errorf("no key: exit %d, stderr %q; want 1 and %q", code, errb.String(), want)
	}

	t.Setenv("OPENAI_API_KEY", key)
	out.Reset()
	errb.Reset()
	code = run(t.Context(), args, strings.NewReader(""), &out, &errb)
	var rep struct {
		Requests     int `json:"requests"`
		Errors       int `json:"errors"`
		OutputTokens int `json:"output_tokens"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); code != 0 || err != nil || rep.Requests != 2 || rep.Errors != 0 || rep.OutputTokens != 8 {
		t.Errorf("OPENAI_API_KEY: exit %d (%v), %+v, stderr %q; want 0 and 2 requests of 4 tokens", code, err, rep, errb.String())
	}
	if strings.Contains(out.String()+errb.String(), key) {
		t.Errorf("the key printed: stdout %q, stderr %q", out.String(), errb.String())
	}

	t.Setenv("OPENAI_API_KEY", "sk-wrong-99ae31")
	out.Reset()
	errb.Reset()
	code = run(t.Context(), append(args, "--served-model-name", "m"), strings.NewReader(""), &out, &errb)
	if want := "the server refused the credentials load sent (Authorization: Bearer from OPENAI_API_KEY; values never shown): check that OPENAI_API_KEY holds the key"; code != 1 || !strings.Contains(errb.String(), want) || !strings.Contains(out.String(), "[redacted]") {
		t.Errorf("wrong key: exit %d, stdout %q, stderr %q; want 1, %q and the echo redacted", code, out.String(), errb.String(), want)
	}
	if strings.Contains(out.String()+errb.String(), "sk-wrong") {
		t.Errorf("wrong key printed: stdout %q, stderr %q", out.String(), errb.String())
	}

	gw := fleettest.KeyGateway(t, "X-Api-Key", "gw-1234abcd", true)
	t.Setenv("OPENAI_API_KEY", "")
	out.Reset()
	errb.Reset()
	args[1] = gw
	code = run(t.Context(), append(args, "--header", "X-Api-Key: gw-1234abcd"), strings.NewReader(""), &out, &errb)
	if err := json.Unmarshal(out.Bytes(), &rep); code != 0 || err != nil || rep.Requests != 2 || rep.Errors != 0 {
		t.Errorf("--header: exit %d (%v), %+v, stderr %q; want 0 and 2 requests", code, err, rep, errb.String())
	}
}

// TestLoadHeaderRefused: a --header item that is not NAME: VALUE, a name
// that is no header name, a value with a line break, or a header load sets
// itself is exit 2 naming the item, never its value.
func TestLoadHeaderRefused(t *testing.T) {
	for _, tc := range []struct{ item, want string }{
		{"Bearer sk-abc", "--header item 1: want 'NAME: VALUE'"},
		{"X Key: sk-abc", `--header item 1: "X Key" is not a header name`},
		{"X-Key: sk-abc\r\nHost: evil", "--header item 1 (X-Key): its value is not a valid header value"},
		{"content-type: text/plain", "--header item 1: Content-Type is load's own"},
	} {
		var out, errb bytes.Buffer
		code := run(t.Context(), []string{"load", "http://127.0.0.1:1", "--concurrency", "1", "--header", tc.item}, strings.NewReader(""), &out, &errb)
		if code != 2 || !strings.Contains(errb.String(), tc.want) || strings.Contains(errb.String(), "sk-abc") {
			t.Errorf("%q: exit %d, stderr %q; want 2 and %q without the value", tc.item, code, errb.String(), tc.want)
		}
	}
}

// TestLoadHeaderKeyAndFlags: OPENAI_API_KEY is Authorization: Bearer KEY;
// a --header Authorization replaces it (vllm bench serve's --header
// overrides its environment variable too); other headers are added, a
// name given twice keeping both values; the URL's user:password is
// Authorization: Basic unless the key replaces it. Each field's source is
// the one whose value is sent.
func TestLoadHeaderKeyAndFlags(t *testing.T) {
	for _, tc := range []struct {
		key      string
		items    []string
		userinfo *url.Userinfo
		want     http.Header
		from     load.HeaderSources
	}{
		{"sk-1", nil, nil, http.Header{"Authorization": {"Bearer sk-1"}}, load.HeaderSources{"Authorization": "OPENAI_API_KEY"}},
		{" sk-1\n", []string{"X-Api-Key: gw"}, nil, http.Header{"Authorization": {"Bearer sk-1"}, "X-Api-Key": {"gw"}},
			load.HeaderSources{"Authorization": "OPENAI_API_KEY", "X-Api-Key": "--header"}},
		{"sk-1", []string{"authorization: Basic dTpw"}, nil, http.Header{"Authorization": {"Basic dTpw"}}, load.HeaderSources{"Authorization": "--header"}},
		{"", []string{"X-A: 1", "x-a:2"}, nil, http.Header{"X-A": {"1", "2"}}, load.HeaderSources{"X-A": "--header"}},
		{"", nil, nil, http.Header{}, load.HeaderSources{}},
		// base64("u:p") = dTpw
		{"", nil, url.UserPassword("u", "p"), http.Header{"Authorization": {"Basic dTpw"}}, load.HeaderSources{"Authorization": "the URL's user:password"}},
		{"sk-1", nil, url.UserPassword("u", "p"), http.Header{"Authorization": {"Bearer sk-1"}}, load.HeaderSources{"Authorization": "OPENAI_API_KEY"}},
	} {
		got, from, err := loadHeader(tc.items, tc.key, tc.userinfo)
		if err != nil || fmt.Sprint(got) != fmt.Sprint(tc.want) || fmt.Sprint(from) != fmt.Sprint(tc.from) {
			t.Errorf("key %q, items %q, userinfo %v: %v, %v, %v; want %v, %v", tc.key, tc.items, tc.userinfo, got, from, err, tc.want, tc.from)
		}
	}
}

// TestLoadURLPasswordNotPrinted: a URL's user:password (sent as
// Authorization: Basic, as Go's client and curl do) is a credential as
// OPENAI_API_KEY is: it is sent, a 401 says a header was sent, and no
// output shows it. GET /v1/models' 401 printed the URL whole ("load: GET
// http://user:sk-...@.../v1/models: 401 Unauthorized (load sent no API
// key ...)").
func TestLoadURLPasswordNotPrinted(t *testing.T) {
	const pass = "sk-url-6c02f9"
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r.Header.Get("Authorization"))
		w.WriteHeader(http.StatusUnauthorized)
	}))
	t.Cleanup(srv.Close)
	u := strings.Replace(srv.URL, "http://", "http://user:"+pass+"@", 1)
	t.Setenv("OPENAI_API_KEY", "")
	var out, errb bytes.Buffer
	code := run(t.Context(), []string{"load", u, "--concurrency", "1", "--requests", "1"}, strings.NewReader(""), &out, &errb)
	if want := "401 Unauthorized (the server refused the credentials load sent (Authorization: Basic from the URL's user:password; values never shown): a server started with --api-key (vLLM, SGLang, llama.cpp) takes its key as Authorization: Bearer KEY, not Basic"; code != 1 || !strings.Contains(errb.String(), want) || strings.Contains(out.String()+errb.String(), pass) {
		t.Errorf("exit %d, stdout %q, stderr %q; want 1, %q and no password", code, out.String(), errb.String(), want)
	}
	if a, _ := got.Load().(string); a != "Basic dXNlcjpzay11cmwtNmMwMmY5" { // base64("user:sk-url-6c02f9")
		t.Errorf("Authorization %q; want the URL's user and password as Basic", a)
	}
}

// TestLoadSourceRedacted: the calibration file's source is the command as
// typed but without its secrets, as every other output: `load
// http://user:pw@127.0.0.1:18002 ... --calibrate c.json` wrote the password
// into the file ("source": "infscale load http://user:pw@..."), and an
// --header key likewise. url.URL.Redacted writes the password as xxxxx; a
// credential header's value (Credentials: the whole value and the part
// after the scheme) as [redacted], the item then quoted for its space.
func TestLoadSourceRedacted(t *testing.T) {
	args := []string{"load", "http://user:pw-9f2@127.0.0.1:8000", "-H", "X-Api-Key: gw-51c", "--header=Authorization: Bearer sk-77a",
		"--concurrency", "1,2", "--calibrate", "c.json"}
	header := http.Header{"X-Api-Key": {"gw-51c"}, "Authorization": {"Bearer sk-77a"}}
	want := "infscale load http://user:xxxxx@127.0.0.1:8000 -H 'X-Api-Key: [redacted]' '--header=Authorization: [redacted]' --concurrency 1,2 --calibrate c.json"
	if got := loadSource(args, "http://user:pw-9f2@127.0.0.1:8000", header); got != want {
		t.Errorf("source %q;\nwant   %q", got, want)
	}
	// Without secrets it is commandLine's, unchanged.
	plain := []string{"load", "http://127.0.0.1:8000", "--concurrency", "1"}
	if got, want := loadSource(plain, "http://127.0.0.1:8000", http.Header{}), "infscale load http://127.0.0.1:8000 --concurrency 1"; got != want {
		t.Errorf("source %q; want %q", got, want)
	}
}
