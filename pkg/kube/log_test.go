package kube

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"
)

// client-go's lines: ERROR shown as WARN with component=client-go, the
// same message again within the minute dropped and counted on the next.
func TestClientLogHandler(t *testing.T) {
	var buf bytes.Buffer
	base := slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn, ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == slog.TimeKey {
			return slog.Attr{}
		}
		return a
	}})
	h := ClientLogHandler(base, time.Minute).(*clientLog)
	now := time.Unix(1000, 0)
	h.now = func() time.Time { return now }
	log := slog.New(h).With("logger", "UnhandledError")

	log.Error("discovery failed", "err", "refused") // t=0: shown
	now = now.Add(30 * time.Second)
	log.Error("discovery failed", "err", "refused") // t=30 s: dropped
	log.Error("watch failed", "err", "forbidden")   // another message: shown
	now = now.Add(31 * time.Second)
	log.Error("discovery failed", "err", "refused") // t=61 s: shown, 1 dropped
	log.Info("retrying")                            // below the handler's level

	want := `level=WARN msg="discovery failed" logger=UnhandledError component=client-go err=refused
level=WARN msg="watch failed" logger=UnhandledError component=client-go err=forbidden
level=WARN msg="discovery failed" logger=UnhandledError component=client-go err=refused suppressed_since_last=1
`
	if got := buf.String(); got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if h.Enabled(context.Background(), slog.LevelError) != true || h.Enabled(context.Background(), slog.LevelInfo) {
		t.Error("Enabled: want ERROR (as WARN) on, INFO off at level WARN")
	}
	if strings.Contains(buf.String(), "retrying") {
		t.Error("an INFO line passed a WARN handler")
	}
}
