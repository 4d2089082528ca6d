package kube

import (
	"context"
	"log/slog"
	"sync"
	"time"
)

// ClientLogEvery is how often serve lets one message of client-go's
// through (ClientLogHandler's every).
const ClientLogEvery = time.Minute

// ClientLogHandler wraps h for client-go's own log lines (klog, routed with
// klog.SetSlogLogger): each record gains component=client-go, ERROR becomes
// WARN (the caller reports what a failure costs a target in its own words;
// client-go's line is the detail), and a message repeated within every is
// dropped, the number dropped carried as suppressed_since_last on the next
// one that passes. client-go logs a discovery or watch failure on each
// retry, which would otherwise repeat every cycle. every <= 0 keeps all.
func ClientLogHandler(h slog.Handler, every time.Duration) slog.Handler {
	return &clientLog{h: h, every: every, seen: &seen{last: map[string]*repeat{}}, now: time.Now}
}

type clientLog struct {
	h     slog.Handler
	every time.Duration
	seen  *seen
	now   func() time.Time
}

type seen struct {
	mu   sync.Mutex
	last map[string]*repeat
}

type repeat struct {
	at         time.Time
	suppressed int
}

// maxSeen bounds the messages remembered; past it the memory starts over.
const maxSeen = 256

func (c *clientLog) Enabled(ctx context.Context, l slog.Level) bool {
	if l > slog.LevelWarn {
		l = slog.LevelWarn
	}
	return c.h.Enabled(ctx, l)
}

func (c *clientLog) Handle(ctx context.Context, r slog.Record) error {
	suppressed := 0
	if c.every > 0 {
		now := c.now()
		c.seen.mu.Lock()
		e := c.seen.last[r.Message]
		switch {
		case e != nil && now.Sub(e.at) < c.every:
			e.suppressed++
			c.seen.mu.Unlock()
			return nil
		case e != nil:
			suppressed, e.at, e.suppressed = e.suppressed, now, 0
		default:
			if len(c.seen.last) >= maxSeen {
				c.seen.last = map[string]*repeat{}
			}
			c.seen.last[r.Message] = &repeat{at: now}
		}
		c.seen.mu.Unlock()
	}
	level := r.Level
	if level > slog.LevelWarn {
		level = slog.LevelWarn
	}
	out := slog.NewRecord(r.Time, level, r.Message, r.PC)
	out.AddAttrs(slog.String("component", "client-go"))
	r.Attrs(func(a slog.Attr) bool { out.AddAttrs(a); return true })
	if suppressed > 0 {
		out.AddAttrs(slog.Int("suppressed_since_last", suppressed))
	}
	return c.h.Handle(ctx, out)
}

func (c *clientLog) WithAttrs(as []slog.Attr) slog.Handler {
	d := *c
	d.h = c.h.WithAttrs(as)
	return &d
}

func (c *clientLog) WithGroup(name string) slog.Handler {
	d := *c
	d.h = c.h.WithGroup(name)
	return &d
}
