package load

import (
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// runOne runs one request of cfg against handler and returns its error.
func runOne(t *testing.T, cfg Config, handler http.HandlerFunc) error {
	t.Helper()
	srv := httptest.NewServer(handler)
	defer srv.Close()
	cfg.URL, cfg.Concurrency, cfg.Requests, cfg.Duration, cfg.Timeout = srv.URL, 1, 1, 10*time.Second, 5*time.Second
	recs, _, err := Run(t.Context(), cfg)
	if err != nil || len(recs) != 1 {
		t.Fatalf("%v, %d records", err, len(recs))
	}
	return recs[0].Err
}

// TestNotFoundNamesEndpoint: a 404 of every request said to check the
// path, --endpoint and --served-model-name, not which path it was: a
// server that serves /v1/completions alone answered --endpoint chat's
// requests "404 page not found". The hint names the path requested and
// the other endpoint's flag and path.
func TestNotFoundNamesEndpoint(t *testing.T) {
	const check = "check the URL's path, --endpoint and --served-model-name (GET /v1/models lists the names)"
	for _, tc := range []struct {
		chat bool
		want string
	}{
		{true, "404 Not Found: 404 page not found (" + check + ": this request went to /v1/chat/completions; --endpoint completions sends /v1/completions, which a server may serve alone)"},
		{false, "404 Not Found: 404 page not found (" + check + ": this request went to /v1/completions; --endpoint chat sends /v1/chat/completions, which a server may serve alone)"},
	} {
		err := runOne(t, Config{Model: "m", Chat: tc.chat}, http.NotFound)
		if err == nil || err.Error() != tc.want {
			t.Errorf("chat %t: %v\nwant %s", tc.chat, err, tc.want)
		}
	}
}

// TestNoStreamQuotesBody: a 200 that is no stream said its Content-Type
// alone: a proxy's login page read `the answer is "text/html"`, an empty
// 200 `the answer is ""`. The page is quoted by its title (bodyexcerpt:
// " ..." after it, as more text follows), the empty body said so.
func TestNoStreamQuotesBody(t *testing.T) {
	const tail = `, not a stream (text/event-stream): load sends "stream": true and needs a server that streams (an OpenAI-compatible one)`
	login := func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, "<!doctype html><html><head><title>Sign in - Corp SSO</title></head><body><form>...</form></body></html>")
	}
	empty := func(w http.ResponseWriter, r *http.Request) { w.Header().Set("Content-Type", "application/json") }
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		want    string
	}{
		{"a login page", login, `no output: the answer is "text/html; charset=utf-8" ("Sign in - Corp SSO ...")` + tail},
		{"an empty 200", empty, `no output: the answer is 200 OK with an empty body (Content-Type "application/json")` + tail},
	} {
		if err := runOne(t, Config{Model: "m"}, tc.handler); err == nil || err.Error() != tc.want {
			t.Errorf("%s: %v\nwant %s", tc.name, err, tc.want)
		}
	}
}

// TestDiscoverModelWrongScheme: an http:// URL of an HTTPS server is
// answered 400 by Go's TLS server ("Client sent an HTTP request to an
// HTTPS server."), to which load added "(give --served-model-name)",
// which would not help; the server's message is said alone. A redirect
// to https names the https base URL to give.
func TestDiscoverModelWrongScheme(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.NotFoundHandler())
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the TLS handshake's complaint
	srv.StartTLS()
	defer srv.Close()
	plain := "http" + srv.URL[len("https"):]
	_, err := DiscoverModel(t.Context(), http.DefaultClient, plain, nil, nil)
	if want := "load: GET " + plain + "/v1/models: 400 Bad Request: Client sent an HTTP request to an HTTPS server."; err == nil || err.Error() != want {
		t.Errorf("http to an HTTPS server: %v\nwant %s", err, want)
	}
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://127.0.0.1:8443"+r.URL.Path, http.StatusMovedPermanently)
	}))
	defer redirect.Close()
	_, err = DiscoverModel(t.Context(), NewClient(1), redirect.URL, nil, nil)
	want := "load: GET " + redirect.URL + "/v1/models: 301 Moved Permanently: the server redirects to https://127.0.0.1:8443/v1/models, which load does not follow " +
		"(a 301, 302 or 303 turns the POST into a GET, and a redirect may leave loopback): give https://127.0.0.1:8443 as the URL"
	if err == nil || err.Error() != want {
		t.Errorf("a redirect to https: %v\nwant %s", err, want)
	}
}

// TestRedirectToLoginPage: a proxy that sends its unauthenticated clients
// to a login page (302 to /oauth2/start?rd=/v1/completions, the page
// to return to in its query) was told "give http://HOST/oauth2/start?rd=... as
// the URL", a page no API lives under. A redirect that is not the API's
// path under another base says it may be a login page and what to give.
func TestRedirectToLoginPage(t *testing.T) {
	login := func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/oauth2/start?rd="+r.URL.Path, http.StatusFound)
	}
	err := runOne(t, Config{Model: "m"}, login)
	want := "302 Found: the server redirects to http://127.0.0.1:"
	tail := "/oauth2/start?rd=/v1/completions, not to /v1/completions under another base URL: a proxy's login page? load follows no redirect: " +
		"give the URL of the server's API itself, or what the proxy takes (its key with --header 'NAME: VALUE')"
	if err == nil || !strings.HasPrefix(err.Error(), want) || !strings.HasSuffix(err.Error(), tail) {
		t.Errorf("%v\nwant %s...%s", err, want, tail)
	}
}
