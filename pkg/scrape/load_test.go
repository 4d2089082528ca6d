package scrape

import (
	"bytes"
	"compress/flate"
	"compress/gzip"
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/modelserver"
)

func TestLoadURL(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) {
		if !strings.Contains(r.Header.Get("Accept"), "text/plain") {
			t.Errorf("Accept = %q", r.Header.Get("Accept"))
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write([]byte("vllm:num_requests_running 2\nvllm:num_requests_waiting 10\n"))
	})
	mux.HandleFunc("/om", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/openmetrics-text; version=1.0.0; charset=utf-8")
		_, _ = w.Write([]byte(omPage))
	})
	mux.HandleFunc("/json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`[{"iter": 1}]`))
	})
	mux.HandleFunc("/bad", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte("vllm:num_requests_running 1\nvllm:num_requests_waiting x\n"))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	})
	mux.HandleFunc("/500", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "boom", 500) })
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx := context.Background()

	before := time.Now()
	p, err := Load(ctx, srv.Client(), srv.URL+"/metrics", nil, modelserver.Unknown)
	if err != nil {
		t.Fatal(err)
	}
	if p.Source != srv.URL+"/metrics" || p.Running != 2 || p.Waiting != 10 || p.Time.Before(before) {
		t.Errorf("page %+v", p)
	}
	if p, err := Load(ctx, srv.Client(), srv.URL+"/om", nil, modelserver.Unknown); err != nil || p.PromptTokens != 1200 {
		t.Errorf("om: %v %v", p, err)
	}

	for path, want := range map[string]error{"/json": ErrInvalidPage, "/bad": ErrInvalidPage, "/500": ErrFetch} {
		_, err := Load(ctx, srv.Client(), srv.URL+path, nil, modelserver.Unknown)
		if !errors.Is(err, want) || !strings.Contains(err.Error(), srv.URL+path) {
			t.Errorf("%s: err = %v, want %v naming the URL", path, err, want)
		}
	}
	var pe *PageError
	if _, err := Load(ctx, nil, srv.URL+"/bad", nil, modelserver.Unknown); !errors.As(err, &pe) || pe.Line != 2 {
		t.Errorf("bad page: %v, want line 2", err)
	}

	short := &http.Client{Timeout: 50 * time.Millisecond}
	_, err = Load(ctx, short, srv.URL+"/slow", nil, modelserver.Unknown)
	var timeout interface{ Timeout() bool }
	if !errors.Is(err, ErrFetch) || !IsRuntime(err) || !errors.As(err, &timeout) || !timeout.Timeout() {
		t.Errorf("timeout: err = %v, want ErrFetch wrapping the client's timeout error", err)
	}
	cctx, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	defer cancel()
	if _, err := Load(cctx, nil, srv.URL+"/slow", nil, modelserver.Unknown); !errors.Is(err, ErrFetch) || !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("context deadline: err = %v, want ErrFetch", err)
	}

	// A closed port: connection refused is a runtime failure.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	if _, err := Load(ctx, nil, "http://"+addr+"/metrics", nil, modelserver.Unknown); !errors.Is(err, ErrFetch) {
		t.Errorf("refused: err = %v, want ErrFetch", err)
	}
}

func TestLoadFileAndStdin(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "page.prom")
	if err := os.WriteFile(path, []byte("llamacpp:requests_processing 1\nllamacpp:requests_deferred 3\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p, err := Load(ctx, nil, path, nil, modelserver.Unknown)
	if err != nil || p.Server != modelserver.LlamaCpp || p.Running != 1 || p.Waiting != 3 || p.Source != path || p.Time.IsZero() {
		t.Fatalf("file: %+v %v", p, err)
	}
	p, err = Load(ctx, nil, "-", strings.NewReader("tgi_queue_size 4\n"), modelserver.Unknown)
	if err != nil || p.Source != StdinSource || p.Waiting != 4 || p.Time.IsZero() {
		t.Fatalf("stdin: %+v %v", p, err)
	}
	for src, want := range map[string]error{
		filepath.Join(dir, "missing.prom"): ErrSource,
		dir:                                ErrSource,
		"ftp://host/metrics":               ErrSource,
		// net/url takes any digits as a port; TCP's are 1..65535 (it
		// failed at the dial, a runtime error).
		"http://127.0.0.1:99999/metrics": ErrSource,
		"http://127.0.0.1:0/metrics":     ErrSource,
	} {
		if _, err := Load(ctx, nil, src, nil, modelserver.Unknown); !errors.Is(err, want) || !strings.Contains(err.Error(), src) || IsRuntime(err) {
			t.Errorf("%s: err = %v, want %v naming the source", src, err, want)
		}
	}
}

func TestLoadAll(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/down" {
			http.Error(w, "down", 503)
			return
		}
		_, _ = w.Write([]byte("vllm:num_requests_running 2\nvllm:num_requests_waiting 1\n"))
	}))
	defer srv.Close()
	srcs := []string{srv.URL + "/a", srv.URL + "/down", srv.URL + "/b", srv.URL + "/c"}
	pages, errs := LoadAll(context.Background(), nil, srcs, nil, modelserver.Unknown, 2)
	for i := range srcs {
		if (pages[i] == nil) == (errs[i] == nil) {
			t.Errorf("%d: page %v err %v, want exactly one", i, pages[i], errs[i])
		}
	}
	if !errors.Is(errs[1], ErrFetch) {
		t.Errorf("down: %v", errs[1])
	}
	// 3 live replicas of running 2 + waiting 1: running 6, waiting 3; the
	// failed one does not vote.
	tot := Aggregate(pages)
	if tot.Running != 6 || tot.Waiting != 3 || tot.Reporting != 3 || tot.Pages != 4 {
		t.Errorf("totals %+v", tot)
	}
}

// TestLoadEncodingsAndCuts: a page sent gzip-compressed with
// Content-Encoding: gzip is read (Go's client asks for gzip and undoes
// it); gzip without the header, gzip twice, or a Content-Encoding not asked
// for is a page error naming the URL at line 1 and the server's fault
// (they were "NUL byte: binary data" or "decompress it first (gunzip
// it...)", a hint for a file); a page cut mid-body or sent half and then
// held past the timeout is a fetch failure (runtime), never the half read.
func TestLoadEncodingsAndCuts(t *testing.T) {
	const page = "vllm:num_requests_running 2\nvllm:num_requests_waiting 10\n"
	gz := func(b []byte) []byte {
		var buf bytes.Buffer
		w := gzip.NewWriter(&buf)
		_, _ = w.Write(b)
		_ = w.Close()
		return buf.Bytes()
	}
	deflated := func(b []byte) []byte {
		var buf bytes.Buffer
		w, _ := flate.NewWriter(&buf, flate.BestSpeed)
		_, _ = w.Write(b)
		_ = w.Close()
		return buf.Bytes()
	}
	release := make(chan struct{})
	defer close(release)
	mux := http.NewServeMux()
	mux.HandleFunc("/gzip", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Accept-Encoding") != "gzip" {
			t.Errorf("Accept-Encoding = %q, want gzip (Go's transport)", r.Header.Get("Accept-Encoding"))
		}
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write(gz([]byte(page)))
	})
	mux.HandleFunc("/gzip-no-header", func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write(gz([]byte(page))) })
	mux.HandleFunc("/gzip-twice", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "gzip")
		_, _ = w.Write(gz(gz([]byte(page))))
	})
	mux.HandleFunc("/deflate", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Encoding", "deflate")
		_, _ = w.Write(deflated([]byte(page)))
	})
	mux.HandleFunc("/cut", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "500")
		_, _ = w.Write([]byte(page[:30]))
		w.(http.Flusher).Flush()
		conn, _, _ := http.NewResponseController(w).Hijack()
		conn.Close()
	})
	mux.HandleFunc("/half-then-hang", func(w http.ResponseWriter, r *http.Request) {
		_, _ = w.Write([]byte(page[:30]))
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	ctx := context.Background()

	p, err := Load(ctx, srv.Client(), srv.URL+"/gzip", nil, modelserver.Unknown)
	if err != nil || p.Running != 2 || p.Waiting != 10 {
		t.Fatalf("gzip with Content-Encoding: page %+v, err %v; want running 2, waiting 10", p, err)
	}
	for path, want := range map[string]string{
		"/gzip-no-header": "gzip-compressed data without Content-Encoding: gzip",
		"/gzip-twice":     "gzip-compressed twice",
		"/deflate":        `Content-Encoding "deflate", which infscale did not ask for`,
	} {
		p, err := Load(ctx, srv.Client(), srv.URL+path, nil, modelserver.Unknown)
		var pe *PageError
		if p != nil || !errors.As(err, &pe) || pe.Line != 1 || IsRuntime(err) ||
			!strings.HasPrefix(err.Error(), srv.URL+path+":1: invalid metrics page: ") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: page %v, err %v; want a page error at line 1 saying %q", path, p, err, want)
		}
	}
	client := &http.Client{Timeout: 300 * time.Millisecond}
	for _, path := range []string{"/cut", "/half-then-hang"} {
		start := time.Now()
		p, err := Load(ctx, client, srv.URL+path, nil, modelserver.Unknown)
		if p != nil || !IsRuntime(err) || !strings.HasPrefix(err.Error(), srv.URL+path+": ") {
			t.Errorf("%s: page %v, err %v; want a fetch failure naming the URL", path, p, err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: took %v, want it cut by the 300ms timeout", path, d)
		}
	}
}

// A non-2xx answer's body often says what to do: llama.cpp's server
// without --metrics answers 501 with a JSON error saying "Start it with
// `--metrics`" (tools/server, format_error_response), vLLM's FastAPI 404
// {"detail":"Not Found"}, a proxy a line of text. The error quoted only
// the status ("HTTP status 501 Not Implemented").
func TestLoadStatusQuotesBody(t *testing.T) {
	// tools/server's answer, format_error_response(..., ERROR_TYPE_NOT_SUPPORTED).
	const llamaNoMetrics = `{"error":{"code":501,"message":"This server does not support metrics endpoint. Start it with ` + "`--metrics`" + `","type":"not_supported_error"}}`
	for name, tc := range map[string]struct {
		status      int
		contentType string
		body        string
		want        string
	}{
		"llama.cpp without --metrics": {501, "application/json; charset=utf-8", llamaNoMetrics, "HTTP status 501 Not Implemented: " + llamaNoMetrics},
		"FastAPI 404":                 {404, "application/json", `{"detail":"Not Found"}`, `HTTP status 404 Not Found: {"detail":"Not Found"}`},
		"text, 2 lines":               {503, "text/plain", "upstream connect error\nreset reason: overflow\n", "HTTP status 503 Service Unavailable: upstream connect error ..."},
		// nginx's page says only the status: nothing more to quote.
		"HTML":       {502, "text/html", "<html><head><title>502 Bad Gateway</title></head></html>", "HTTP status 502 Bad Gateway"},
		"long body":  {500, "text/plain", strings.Repeat("x", 5000), "HTTP status 500 Internal Server Error: " + strings.Repeat("x", 200) + " ..."},
		"empty body": {401, "", "", "HTTP status 401 Unauthorized"},
		// Go's http.Error(w, "Unauthorized", 401): the body repeats the status.
		"status again": {401, "text/plain; charset=utf-8", "Unauthorized\n", "HTTP status 401 Unauthorized"},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if tc.contentType != "" {
					w.Header().Set("Content-Type", tc.contentType)
				}
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			_, err := Load(context.Background(), nil, srv.URL+"/metrics", nil, modelserver.Unknown)
			if !errors.Is(err, ErrFetch) || !strings.HasSuffix(err.Error(), tc.want) {
				t.Errorf("err = %v\nwant ErrFetch ending %q", err, tc.want)
			}
		})
	}
}

// A body cut short in transit (the connection closed before the
// Content-Length, a gzip stream truncated) is a fetch failure that says
// so; it was "reading: unexpected EOF".
func TestLoadBodyCutShort(t *testing.T) {
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write([]byte(strings.Repeat("vllm:num_requests_running 3\n", 50)))
	_ = zw.Close()
	cutGzip := gz.Bytes()[:gz.Len()-20]
	for name, serve := range map[string]http.HandlerFunc{
		"short of Content-Length": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Length", "100")
			_, _ = w.Write([]byte("vllm:num_requests_running 3\n"))
		},
		"gzip cut": func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Encoding", "gzip")
			_, _ = w.Write(cutGzip)
		},
	} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(serve)
			defer srv.Close()
			_, err := Load(context.Background(), nil, srv.URL, nil, modelserver.Unknown)
			want := "the body was cut short (the connection closed early, or a compressed body was truncated): scrape again; if it persists, check the server and any proxy in between"
			if !errors.Is(err, ErrFetch) || !strings.Contains(err.Error(), want) {
				t.Errorf("err = %v\nwant ErrFetch saying %q", err, want)
			}
		})
	}
}

// TestLoadURLSpellingHints: the ways a user writes an EPP's or a model
// server's URL that miss its /metrics page. The server answers /metrics
// only, as Go's ServeMux (llm-d's EPP, controller-runtime) and vLLM do.
// Without a path (as one writes a Prometheus target, whose metrics_path
// defaults to /metrics) or with a trailing slash it answers 404, and https://
// to its plain HTTP port fails the TLS handshake; each error said only
// "HTTP status 404 Not Found" or "tls: first record does not look like a
// TLS handshake". Now each says what to write instead.
func TestLoadURLSpellingHints(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/metrics", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte("vllm:num_requests_running 3\n"))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	// A server whose first bytes are neither TLS nor HTTP/ (Python's
	// http.server answers a ClientHello with an HTML error page).
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_, _ = c.Write([]byte("<!DOCTYPE HTML>\n<title>Error response</title>\n"))
			_ = c.Close()
		}
	}()
	raw := ln.Addr().String()
	for url, want := range map[string]string{
		srv.URL:                        "HTTP status 404 Not Found: 404 page not found (the URL has no path, and infscale adds none: model servers and llm-d's EPP serve their page at /metrics; write " + srv.URL + "/metrics)",
		srv.URL + "/":                  "(the URL has no path, and infscale adds none: model servers and llm-d's EPP serve their page at /metrics; write " + srv.URL + "/metrics)",
		srv.URL + "/metrics/":          "HTTP status 404 Not Found: 404 page not found (the path ends in /, which a /metrics handler does not answer; write " + srv.URL + "/metrics)",
		"https://" + host + "/metrics": "http: server gave HTTP response to HTTPS client (the server answers plain HTTP, not TLS: write http://" + host + "/metrics)",
		"https://" + raw + "/metrics":  "tls: first record does not look like a TLS handshake (the server answers plain HTTP, not TLS: write http://" + raw + "/metrics)",
		srv.URL + "/stats":             "HTTP status 404 Not Found: 404 page not found", // a path of its own: nothing to suggest
	} {
		_, err := Load(context.Background(), nil, url, nil, modelserver.Unknown)
		if !errors.Is(err, ErrFetch) || !strings.HasSuffix(err.Error(), want) {
			t.Errorf("%s: err = %v\nwant ErrFetch ending %q", url, err, want)
		}
	}
	if _, err := Load(context.Background(), nil, srv.URL+"/metrics", nil, modelserver.Unknown); err != nil {
		t.Errorf("/metrics: %v", err)
	}
}
