package main

import (
	"io"
	"log/slog"
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
