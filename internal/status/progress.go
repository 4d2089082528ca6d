package status

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
)

// PlainEvery is the most often a plain progress line is written when the
// percentage has moved by less than PlainStep.
const PlainEvery = 10 * time.Second

// PlainStep is the percentage points after which a plain line is written
// at once.
const PlainStep = 10

// heartbeatEvery is how often a plain progress that has not moved says it
// is still working (PlainEvery; tests shorten it).
var heartbeatEvery = PlainEvery

// Progress is the progress of a long command (simulate, tune, backtest) as
// one percentage that never goes back: the least advanced of its parts,
// and never less than what was already shown. On a terminal it is one line
// redrawn in place at most every Every; on a file or pipe that is not a
// terminal (stderr redirected), a plain line "label: 40%" each PlainStep
// points or PlainEvery, and always the final 100%; while the percentage
// does not move (a query a Prometheus holds), a line "label: 40% (still
// working, 30s at 40%)" every PlainEvery until Done; on any other writer (a
// buffer) and when quiet, nothing. Safe for concurrent use.
type Progress struct {
	mu     sync.Mutex
	w      io.Writer
	label  string
	term   bool // redraw in place
	plain  bool // periodic lines
	frac   []float64
	shown  int // the highest whole percentage reported
	last   time.Time
	lastPc int // the percentage of the last plain line (-1: none yet)
	drawn  bool
	now    func() time.Time
	moved  time.Time   // when the shown percentage last rose (plain)
	beat   *time.Timer // the plain heartbeat; nil once Done
}

// NewProgress returns the progress of parts parts (at least 1) under label.
func NewProgress(w io.Writer, label string, parts int, quiet bool) *Progress {
	p := &Progress{w: w, label: label, frac: make([]float64, max(parts, 1)), lastPc: -1, now: time.Now}
	if f, ok := w.(*os.File); ok && !quiet {
		if fi, err := f.Stat(); err == nil {
			p.term = fi.Mode()&os.ModeCharDevice != 0
			p.plain = !p.term
		}
	}
	if p.plain {
		p.moved = p.now()
		p.beat = time.AfterFunc(heartbeatEvery, p.heartbeat)
	}
	return p
}

// heartbeat writes the plain line of a percentage that has not moved for
// heartbeatEvery, then waits again; nothing once Done.
func (p *Progress) heartbeat() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.beat == nil || p.shown >= 100 {
		return
	}
	if now := p.now(); now.Sub(p.last) >= heartbeatEvery {
		p.last = now
		fmt.Fprintf(p.w, "%s: %d%% (still working, %s at %d%%)\n", p.label, p.shown, now.Sub(p.moved).Round(time.Second), p.shown)
	}
	p.beat.Reset(heartbeatEvery)
}

// Part records that part i is a fraction f done (clamped to [0, 1]; a part
// never goes back) and reports the least advanced part.
func (p *Progress) Part(i int, f float64) {
	if !p.term && !p.plain || !(f >= 0) {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.frac[i] = max(p.frac[i], min(f, 1))
	lo := 1.0
	for _, x := range p.frac {
		lo = min(lo, x)
	}
	p.report(lo)
}

// Set reports a fraction f of the whole (one part).
func (p *Progress) Set(f float64) { p.Part(0, f) }

func (p *Progress) report(f float64) {
	pc := max(int(100*f), p.shown)
	now := p.now()
	if pc > p.shown {
		p.moved = now
	}
	p.shown = pc
	switch {
	case p.term:
		if now.Sub(p.last) < Every {
			return
		}
		p.last, p.drawn = now, true
		fmt.Fprintf(p.w, "\r\033[K%s: %3d%%", p.label, pc)
	case p.plain:
		// 100% is always written: the last line says the work finished.
		if pc == p.lastPc || (pc < 100 && pc < p.lastPc+PlainStep && now.Sub(p.last) < PlainEvery && p.lastPc >= 0) {
			return
		}
		p.last, p.lastPc = now, pc
		fmt.Fprintf(p.w, "%s: %d%%\n", p.label, pc)
	}
}

// Done ends the progress: the terminal line is cleared, the heartbeat
// stopped.
func (p *Progress) Done() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.beat != nil {
		p.beat.Stop()
		p.beat = nil
	}
	if p.term && p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}
