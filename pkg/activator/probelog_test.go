package activator

import (
	"bytes"
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe for the probe goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestProbeLogsChanges: an upstream whose /health answers 404 (a wrong
// --probe-path, or not up yet) was only a counter; the activator now logs
// once that it is not ready with the probe's URL and status, and once when
// it turns ready, not once per probe (10 ms probes over about 300 ms).
func TestProbeLogsChanges(t *testing.T) {
	var ok atomic.Bool
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !ok.Load() {
			http.NotFound(w, r)
			return
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer up.Close()
	u, _ := url.Parse(up.URL)
	var log syncBuffer
	a, err := New(Config{Upstream: u, ProbeInterval: 10 * time.Millisecond, Log: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); a.Run(ctx) }()
	time.Sleep(150 * time.Millisecond)
	ok.Store(true)
	time.Sleep(150 * time.Millisecond)
	cancel()
	<-done
	got := log.String()
	notReady := `msg="upstream not ready; requests are held" probe=` + up.URL + `/health reason="404 Not Found"`
	if strings.Count(got, "upstream not ready") != 1 || !strings.Contains(got, notReady) || strings.Count(got, `msg="upstream ready"`) != 1 {
		t.Errorf("log:\n%s\nwant one %q line and one upstream ready line", got, notReady)
	}
}
