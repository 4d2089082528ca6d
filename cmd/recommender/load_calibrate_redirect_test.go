package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestLoadCalibrateFollowsNoRedirect: load follows no redirect (a 307 to
// another host would leave CheckLoopback behind), but --calibrate asked
// the server for the model and its max_model_len with a client of its own
// that followed one: a /v1/models redirected to another server reached it,
// with the --header given. It is refused as a run's requests are: exit 1
// naming the redirect, and the other server gets no request.
func TestLoadCalibrateFollowsNoRedirect(t *testing.T) {
	var reached atomic.Int64
	var key atomic.Value
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reached.Add(1)
		key.Store(r.Header.Get("X-Api-Key"))
		fmt.Fprint(w, `{"object":"list","data":[{"id":"m","max_model_len":4096}]}`)
	}))
	defer other.Close()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	defer srv.Close()
	var out, errb bytes.Buffer
	code := run(t.Context(), []string{"load", srv.URL, "--concurrency", "1,2", "--requests", "1", "--progress", "never",
		"--calibrate", filepath.Join(t.TempDir(), "cal.json"), "--header", "X-Api-Key: gw-55aa"}, strings.NewReader(""), &out, &errb)
	want := fmt.Sprintf("307 Temporary Redirect: the server redirects to %s/v1/models, which load does not follow", other.URL)
	if code != 1 || !strings.Contains(errb.String(), want) {
		t.Errorf("exit %d, stderr %q; want 1 and %q", code, errb.String(), want)
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("the redirect's target got %d requests (X-Api-Key %q); want none", n, key.Load())
	}
}
