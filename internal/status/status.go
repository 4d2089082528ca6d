// Package status is the one progress line of the long-running commands
// (simulate, backtest, profile): a single line on a terminal's stderr,
// overwritten in place at most every Every, and nothing at all when the
// writer is not a terminal (a pipe, a file, a test's buffer), so that output
// stays clean.
package status

import (
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"sync"
	"time"
)

// Every is the least time between two redraws.
const Every = 200 * time.Millisecond

// Line is a progress line on w. Safe for concurrent use.
type Line struct {
	mu   sync.Mutex
	w    io.Writer
	last time.Time
	on   bool
}

// New returns a Line on w, active only when w is a terminal (an *os.File
// that is a character device).
func New(w io.Writer) *Line {
	on := false
	if f, ok := w.(*os.File); ok {
		if fi, err := f.Stat(); err == nil && fi.Mode()&os.ModeCharDevice != 0 {
			on = true
		}
	}
	return &Line{w: w, on: on}
}

// Printf redraws the line with the formatted text, unless the last redraw
// was less than Every ago.
func (l *Line) Printf(format string, args ...any) {
	if !l.on {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.printf(format, args...)
}

func (l *Line) printf(format string, args ...any) {
	if time.Since(l.last) < Every {
		return
	}
	l.last = time.Now()
	fmt.Fprintf(l.w, "\r\033[K"+format, args...)
}

// Done clears the line, if anything was drawn.
func (l *Line) Done() {
	if !l.on {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.last.IsZero() {
		fmt.Fprint(l.w, "\r\033[K")
		l.last = time.Time{}
	}
}

// SetActive forces the line on (draw even when w is not a terminal, e.g.
// `load --progress always`) or off.
func (l *Line) SetActive(on bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.on = on
}

// Active reports whether the line draws: w is a terminal, or SetActive
// turned it on.
func (l *Line) Active() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.on
}

// Bar is a progress bar of width cells for a fraction f (clamped to 0..1):
// "[######..............]".
func Bar(f float64, width int) string {
	n := int(math.Round(float64(width) * min(max(f, 0), 1)))
	return "[" + strings.Repeat("#", n) + strings.Repeat(".", width-n) + "]"
}
