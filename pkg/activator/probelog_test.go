package activator

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/infscale/infscale/internal/syncbuf"
)

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
	var log syncbuf.Buffer
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
