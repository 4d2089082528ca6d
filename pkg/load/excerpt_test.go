package load

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// nginxPage is nginx's 502 page with a paragraph added: 14 lines.
const nginxPage = `<!DOCTYPE html>
<html>
<head>
<title>502 Bad Gateway</title>
<style>body { font-family: sans-serif; }</style>
</head>
<body>
<center><h1>502 Bad Gateway</h1></center>
<hr>
<center>nginx/1.25.3</center>
<p>The upstream server did not answer.</p>
</body>
</html>
`

// A request a server refuses with its error page records the status and
// the excerpt, not the page.
func TestRequestErrorExcerpt(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = w.Write([]byte(nginxPage))
	}))
	defer srv.Close()
	recs, _, err := Run(t.Context(), Config{URL: srv.URL, Model: "m", Concurrency: 1, Requests: 1})
	if err != nil || len(recs) != 1 {
		t.Fatalf("%v, %d records", err, len(recs))
	}
	if got, want := recs[0].Err.Error(), "502 Bad Gateway: nginx/1.25.3 ..."; got != want {
		t.Errorf("error %q, want %q", got, want)
	}
}

// A request an interrupt cancels is not an error: Run returns ctx's error
// and no record of it (it counted as 1 error of a point never finished).
func TestRunCancelledRequestNotAnError(t *testing.T) {
	arrived, stop := make(chan struct{}, 1), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case arrived <- struct{}{}:
		default:
		}
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer srv.Close()
	defer close(stop)
	ctx, cancel := context.WithCancel(t.Context())
	go func() { <-arrived; cancel() }()
	recs, _, err := Run(ctx, Config{URL: srv.URL, Model: "m", Concurrency: 1, Requests: 5})
	if !errors.Is(err, context.Canceled) || len(recs) != 0 {
		t.Errorf("err %v, %d records %+v; want context.Canceled and none", err, len(recs), recs)
	}
}
