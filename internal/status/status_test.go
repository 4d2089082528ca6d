package status

import (
	"bytes"
	"testing"
)

// TestNotATerminal: a buffer is not a terminal: nothing is ever written, so
// piped output and JSON stay clean.
func TestNotATerminal(t *testing.T) {
	var b bytes.Buffer
	l := New(&b, 2)
	l.Printf("queries %d/%d", 1, 2)
	l.Part(0, 5, 10, "simulating 2 policies")
	l.Done()
	if b.Len() != 0 {
		t.Errorf("wrote %q to a non-terminal", b.String())
	}
}

// TestPart: the line shows the least advanced part (on an active line).
func TestPart(t *testing.T) {
	var b bytes.Buffer
	l := &Line{w: &b, on: true, frac: make([]float64, 2)}
	l.Part(0, 9, 10, "simulating 2 policies")
	if got, want := b.String(), "\r\033[Ksimulating 2 policies:   0%"; got != want {
		t.Errorf("got %q, want %q (part 1 has not started)", got, want)
	}
	l.Done()
	if got := b.String(); got[len(got)-4:] != "\r\033[K" {
		t.Errorf("Done did not clear the line: %q", got)
	}
}
