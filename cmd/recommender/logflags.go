package main

import (
	"context"
	"io"
	"log/slog"
	"os"

	"github.com/infscale/infscale/internal/crashlog"
)

// LogFlags are the log flags of the commands that run until stopped and
// log with log/slog (serve, activator): one level and format rule for
// both, so that their lines on stderr parse alike (docs/serve.md,
// docs/activator.md).
type LogFlags struct {
	LogLevel  string `name:"log-level" default:"info" enum:"debug,info,warn,error" help:"Log level: debug, info, warn, error."`
	LogFormat string `name:"log-format" default:"text" enum:"text,json" help:"Log format: text or json."`
}

// logLevels maps --log-level's values (kong's enum admits no other) to
// slog's levels.
var logLevels = map[string]slog.Level{"debug": slog.LevelDebug, "info": slog.LevelInfo, "warn": slog.LevelWarn, "error": slog.LevelError}

// Logger returns the logger of --log-level and --log-format writing to w:
// slog's text handler (key=value) or its JSON handler (one object a line,
// with time, level and msg), records below the level dropped.
func (f *LogFlags) Logger(w io.Writer) *slog.Logger {
	opts := &slog.HandlerOptions{Level: logLevels[f.LogLevel]}
	if f.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// monitorCrashes starts the crash monitor (crashlog.StartMonitor) for a
// daemon that logs JSON to a file, its stderr: a Go fatal error (a
// concurrent map write, memory exhausted, a stack overflow), which no
// recover catches, then ends in one record too, after Go's plain-text
// trace. Text logs keep the trace alone, readable as it is. ctx is the
// command's signal context (a stop it saw already reaches serve as PID 1's
// child too). A monitor
// that cannot start is logged, and the daemon runs without it.
func (f *LogFlags) monitorCrashes(ctx context.Context, w io.Writer, log *slog.Logger) {
	file, ok := w.(*os.File)
	if f.LogFormat != "json" || !ok {
		return
	}
	if err := crashlog.StartMonitor(ctx, file); err != nil {
		log.Warn("crash monitor not started: a Go fatal error will be only its plain-text trace", "error", err)
	}
}
