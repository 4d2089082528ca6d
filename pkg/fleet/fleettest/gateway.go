// Package fleettest (a test harness) serves infscale's simulated vLLM
// fleet (pkg/fleet) to tests behind what a real deployment puts in front
// of it.
package fleettest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/infscale/infscale/pkg/fleet"
	"github.com/infscale/infscale/pkg/replica"
)

// KeyGateway starts one replica of the simulated fleet behind a check of
// the API key as vLLM's --api-key does it, and returns its base URL: a
// /v1 path whose header name is not value (Authorization: "Bearer KEY")
// is answered 401 {"error":"Unauthorized"}; with echo, the body repeats
// the header it got, {"error":"Unauthorized: NAME: VALUE"}, as a careless
// gateway's does (a key load prints is then seen). Both stop with the
// test.
func KeyGateway(t testing.TB, name, value string, echo bool) string {
	t.Helper()
	r, err := replica.New(replica.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	f, err := fleet.Start(context.Background(), fleet.Config{Replicas: 1, Max: 1, Replica: r})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.Stop)
	return Gateway(t, f, func(r *http.Request) (int, string, bool) {
		if !strings.HasPrefix(r.URL.Path, "/v1") || r.Header.Get(name) == value {
			return 0, "", false
		}
		if echo {
			return http.StatusUnauthorized, fmt.Sprintf(`{"error":"Unauthorized: %s: %s"}`, name, r.Header.Get(name)), true
		}
		return http.StatusUnauthorized, `{"error":"Unauthorized"}`, true
	}, nil)
}

// Gateway serves the fleet f's API behind a gateway, as a test's stand-in
// for what sits before a model server, and returns its base URL: a
// request answer takes (ok) it answers itself, with status and the JSON
// body answer gives (Content-Type: application/json); every other it
// passes on to f, its body buffered (buffered), and counts in passed
// (nil: not counted). It stops with the test.
func Gateway(t testing.TB, f *fleet.Fleet, answer func(*http.Request) (status int, body string, ok bool), passed *atomic.Int64) string {
	t.Helper()
	u, err := url.Parse(f.URL())
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(u)
	proxy.FlushInterval = -1
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if status, body, ok := answer(r); ok {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			io.WriteString(w, body)
			return
		}
		if passed != nil {
			passed.Add(1)
		}
		proxy.ServeHTTP(w, buffered(r))
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// buffered returns r with its body read into memory, as a gateway that
// buffers requests passes it on (nginx's proxy_request_buffering, on by
// default). Streamed through ReverseProxy, the fleet's answer can come
// before the transport's last read of the body (its check that nothing
// follows Content-Length); net/http's HTTP/1 server closes a request body
// as the answer starts unless full duplex is on (golang/go#15527), that
// read fails, and the transport drops the upstream connection: the stream
// was cut, "cut off: the connection broke after 0 text chunks ...
// unexpected EOF" (3 of 30 runs under -race). The activator, which
// streams bodies, turns full duplex on instead.
func buffered(r *http.Request) *http.Request {
	b, _ := io.ReadAll(r.Body) // a short read is sent short: the transport refuses it (502)
	r.Body = io.NopCloser(bytes.NewReader(b))
	return r
}
