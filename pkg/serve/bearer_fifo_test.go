//go:build unix

package serve

import (
	"net/http"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestBearerTokenFIFO: a scrape.bearer_token_file that is a named pipe
// (no writer) used to block the scrape in its read for ever (the read does
// not see the request's deadline); it fails at once, naming the file and
// what it should be, and the scrape reads as failed.
func TestBearerTokenFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "token")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	rt := &bearerTransport{base: http.DefaultTransport, tokenFile: func(string) string { return fifo }}
	req, _ := http.NewRequest(http.MethodGet, "http://127.0.0.1:1/metrics", nil)
	done := make(chan error, 1)
	go func() {
		resp, err := rt.RoundTrip(req)
		if err == nil {
			resp.Body.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		want := "scrape.bearer_token_file: " + fifo + ": not a regular file (a named pipe); want the token's file (a service account token is one)"
		if err == nil || err.Error() != want {
			t.Errorf("err = %v, want %q", err, want)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the scrape still reading the FIFO token after 5s")
	}
}
