package scrape

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	neturl "net/url"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/infscale/infscale/internal/bodyexcerpt"
	"github.com/infscale/infscale/internal/boundedfile"
	"github.com/infscale/infscale/internal/crashlog"
	"github.com/infscale/infscale/internal/httpurl"
	"github.com/infscale/infscale/internal/sourcekey"
	"github.com/infscale/infscale/pkg/modelserver"
)

// DefaultTimeout bounds one fetch of a URL when the client sets no timeout
// (Prometheus's default scrape_timeout).
const DefaultTimeout = 10 * time.Second

// acceptHeader asks for the text format first, OpenMetrics second (as
// Prometheus does with fallback), never protobuf.
const acceptHeader = "text/plain;version=0.0.4;q=0.9,application/openmetrics-text;version=1.0.0;q=0.5,*/*;q=0.1"

// StdinSource is the Page.Source of a page read from "-".
const StdinSource = "stdin"

// Load reads one page from src: "-" (stdin), an http:// or https:// URL, or
// a file path; server as in Read. It records the scrape time in Page.Time
// (when the body was received) for Rate.
//
// client nil means http.DefaultClient; a fetch is bounded by ctx and, when
// the client has no Timeout, by DefaultTimeout.
//
// Load is safe for concurrent use (see LoadAll).
//
// Errors: ErrFetch (runtime: connection refused, timeout, non-2xx status,
// read failure); ErrSource (a missing or unreadable file, another URL
// scheme); *PageError and *NoProfileError as in Read.
func Load(ctx context.Context, client *http.Client, src string, stdin io.Reader, server modelserver.Server) (*Page, error) {
	switch {
	case src == "-":
		if stdin == nil {
			return nil, fmt.Errorf("-: %w: no standard input", ErrSource)
		}
		// A read that blocks (a terminal, a pipe nobody writes to) ends
		// with ctx (a shutdown signal).
		b, ok, err := boundedfile.ReadAll(ctx, stdin, MaxPageBytes)
		if err != nil {
			return nil, fmt.Errorf("%s: %w: %w", StdinSource, ErrFetch, err)
		}
		if !ok {
			return nil, tooLarge(StdinSource)
		}
		p, err := readBytes(b, "", StdinSource, server)
		if p != nil {
			p.Time = time.Now()
		}
		return p, err
	case sourcekey.IsHTTP(src):
		return fetch(ctx, client, src, server)
	case strings.Contains(src, "://"):
		return nil, fmt.Errorf("%s: %w: only http:// and https:// URLs, file paths and - are allowed", src, ErrSource)
	}
	if st, err := os.Stat(src); err == nil && st.IsDir() {
		return nil, fmt.Errorf("%s: %w: is a directory", src, ErrSource)
	}
	// A regular file only (a FIFO would block, /dev/zero never end), of at
	// most MaxPageBytes.
	f, err := boundedfile.Open(src, MaxPageBytes, "a page", "a page is a /metrics text file (save a live page with curl first)")
	if err != nil {
		// A path that names no file (missing, under a regular file, a loop
		// of symbolic links) or may not be read is the input's fault.
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%s: %w: %w%s", src, ErrSource, unwrapPath(err), boundedfile.Where(src))
		}
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.ENOTDIR) || errors.Is(err, syscall.ELOOP) {
			return nil, fmt.Errorf("%s: %w: %w", src, ErrSource, unwrapPath(err))
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, fmt.Errorf("%s: %w: %w", src, ErrFetch, unwrapPath(err))
		}
		return nil, fmt.Errorf("%w: %w", ErrSource, err)
	}
	defer f.Close()
	p, err := Read(f, "", src, server)
	if p != nil {
		p.Time = time.Now()
	}
	return p, err
}

func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// fetch scrapes rawURL. The page (Page.Source) and every error name the URL
// with any password replaced by "xxxxx" (url.URL.Redacted): to scrape
// again, keep the URL given, not Page.Source.
func fetch(ctx context.Context, client *http.Client, rawURL string, server modelserver.Server) (*Page, error) {
	b, ct, url, now, err := get(ctx, client, rawURL, nil)
	if err != nil {
		return nil, err
	}
	p, err := readBytes(b, ct, url, server)
	if err != nil {
		return nil, err
	}
	p.Time = now
	return p, nil
}

// get fetches the /metrics page at rawURL, the one way every page is
// fetched (replicas' pages and holders'): an http(s) URL with a host and a
// valid port, GET with the exposition formats' Accept header, within
// DefaultTimeout when client has no timeout, a 2xx status, at most
// MaxPageBytes (readAll). It returns the body, its Content-Type, the URL
// to name in messages (any password replaced by "xxxxx") and when the body
// was read. Errors: ErrSource (a URL that cannot be fetched), ErrFetch (the
// request, status or read failed), a *PageError for a page over
// MaxPageBytes.
func get(ctx context.Context, client *http.Client, rawURL string, header http.Header) (body []byte, contentType, url string, at time.Time, err error) {
	u, err := neturl.Parse(rawURL)
	if err != nil {
		return nil, "", rawURL, at, fmt.Errorf("%s: %w: %v", rawURL, ErrSource, err)
	}
	url = rawURL
	if _, has := u.User.Password(); has {
		url = u.Redacted()
	}
	if u.Host == "" {
		return nil, "", url, at, fmt.Errorf("%s: %w: no host (allowed: http://HOST[:PORT]/PATH or https://...)", url, ErrSource)
	}
	if err := httpurl.Check(u); errors.Is(err, httpurl.ErrPort) {
		return nil, "", url, at, fmt.Errorf("%s: %w: %v", url, ErrSource, err)
	}
	if client == nil {
		client = http.DefaultClient
	}
	if client.Timeout == 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, rawURL, nil)
	if err != nil {
		return nil, "", url, at, fmt.Errorf("%s: %w: %v", url, ErrSource, err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Accept", acceptHeader)
	resp, err := client.Do(req)
	if err != nil {
		return nil, "", url, at, fmt.Errorf("%s: %w: %w%s", url, ErrFetch, err, schemeHint(u, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		// The body often says what to do: llama.cpp's server without
		// --metrics answers 501 "... Start it with `--metrics`".
		says := ""
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4<<10))
		if ex := bodyexcerpt.Excerpt(resp.Status, resp.Header.Get("Content-Type"), body); ex != "" {
			says = ": " + ex
		}
		return nil, "", url, at, fmt.Errorf("%s: %w: %w%s%s", url, ErrFetch, &StatusError{Code: resp.StatusCode, Status: resp.Status}, says, pathHint(u, resp.StatusCode))
	}
	b, err := readAll(resp.Body, url)
	if err != nil {
		return nil, "", url, at, err
	}
	if err := encoding(resp, b); err != nil {
		return nil, "", url, at, &PageError{Source: url, Line: 1, Err: err}
	}
	return b, resp.Header.Get("Content-Type"), url, time.Now(), nil
}

// StatusError is a non-2xx answer to a page's GET, wrapped with ErrFetch:
// errors.As finds its Code (401, 404, ...) for a caller that knows what the
// server's answer means (an EPP's 401: its /metrics behind authentication).
type StatusError struct {
	// Code is the HTTP status code; Status the status line's text, "404 Not Found".
	Code   int
	Status string
}

func (e *StatusError) Error() string { return "HTTP status " + e.Status }

// pathHint is what a 404 from u suggests when u's path is not where a
// /metrics page is: no path at all (http://chat-epp.llm.svc:9090, as one
// writes a Prometheus target, whose metrics_path defaults to /metrics) or
// a trailing slash (/metrics/: Go's and vLLM's servers answer only
// /metrics). "" for any other status or path.
func pathHint(u *neturl.URL, status int) string {
	if status != http.StatusNotFound {
		return ""
	}
	fix := *u
	switch {
	case u.Path == "" || u.Path == "/":
		fix.Path, fix.RawPath = "/metrics", ""
		return fmt.Sprintf(" (the URL has no path, and infscale adds none: model servers and llm-d's EPP serve their page at /metrics; write %s)", fix.Redacted())
	case len(u.Path) > 1 && strings.HasSuffix(u.Path, "/"):
		fix.Path, fix.RawPath = strings.TrimRight(u.Path, "/"), ""
		return fmt.Sprintf(" (the path ends in /, which a /metrics handler does not answer; write %s)", fix.Redacted())
	}
	return ""
}

// schemeHint is what a failed request to u suggests when u is https:// and
// the server is not TLS: its first bytes are no TLS record (a
// tls.RecordHeaderError), or are an HTTP answer (net/http's unexported
// "server gave HTTP response to HTTPS client", matched by its text). vLLM
// and llm-d's EPP serve /metrics over plain HTTP, the EPP's bearer-token
// check included. "" otherwise.
func schemeHint(u *neturl.URL, err error) string {
	var rh tls.RecordHeaderError
	if u.Scheme != "https" || !errors.As(err, &rh) && !strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") {
		return ""
	}
	fix := *u
	fix.Scheme = "http"
	return fmt.Sprintf(" (the server answers plain HTTP, not TLS: write %s)", fix.Redacted())
}

// encoding is the error for a body b still encoded after the HTTP client
// read it: a Content-Encoding the request did not ask for (Go's client
// asks for gzip and removes the header once it has decompressed the
// body), or gzip data without the header, or gzip inside gzip. Prometheus
// cannot read such a body either. Nil for a plain body.
func encoding(resp *http.Response, b []byte) error {
	const fix = "a server or proxy bug (Prometheus's scrape fails on it too): serve the page plain, or gzip with Content-Encoding: gzip"
	if ce := resp.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		return fmt.Errorf("the body is sent with Content-Encoding %q, which infscale did not ask for (it asks for gzip only): %s", ce, fix)
	}
	if !bytes.HasPrefix(b, gzipMagic) {
		return nil
	}
	if resp.Uncompressed {
		return fmt.Errorf("the body is gzip-compressed twice (still gzip data after Content-Encoding: gzip was undone): %s", fix)
	}
	return fmt.Errorf("the body is gzip-compressed data without Content-Encoding: gzip: %s", fix)
}

// LoadAll loads every source concurrently (at most parallel at once; <= 0
// means 16) and returns pages and errors aligned with srcs: for each i
// exactly one of pages[i] and errs[i] is non-nil. A failed scrape is a
// replica that does not vote (Aggregate skips nil pages); the caller decides
// whether any error is fatal. A source naming the same page as an earlier
// one (Duplicates: the same URL or file after normalisation, "-" twice) is
// not read: its error is DuplicateError's (ErrSource).
func LoadAll(ctx context.Context, client *http.Client, srcs []string, stdin io.Reader, server modelserver.Server, parallel int) ([]*Page, []error) {
	if parallel <= 0 {
		parallel = 16
	}
	pages := make([]*Page, len(srcs))
	errs := make([]error, len(srcs))
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	dup := sourcekey.Duplicates(srcs)
	for i, src := range srcs {
		if dup[i] >= 0 {
			errs[i] = DuplicateError(srcs, i, dup[i])
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			defer crashlog.Recover()
			pages[i], errs[i] = Load(ctx, client, src, stdin, server)
			if errs[i] != nil {
				pages[i] = nil
			}
		}()
	}
	wg.Wait()
	return pages, errs
}
