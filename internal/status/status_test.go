package status

import (
	"bytes"
	"testing"
)

// TestNotATerminal: a buffer is not a terminal: nothing is ever written, so
// piped output and JSON stay clean.
func TestNotATerminal(t *testing.T) {
	var b bytes.Buffer
	l := New(&b)
	l.Printf("queries %d/%d", 1, 2)
	l.Done()
	if b.Len() != 0 {
		t.Errorf("wrote %q to a non-terminal", b.String())
	}
}

// TestRedraw: an active line is redrawn in place (carriage return, erase
// line), at most once per Every, and Done erases it.
func TestRedraw(t *testing.T) {
	var b bytes.Buffer
	l := &Line{w: &b, on: true}
	l.Printf("queries %d/%d", 1, 2)
	l.Printf("queries %d/%d", 2, 2) // within Every of the first: not drawn
	if got, want := b.String(), "\r\033[Kqueries 1/2"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	l.Done()
	if got := b.String(); got[len(got)-4:] != "\r\033[K" {
		t.Errorf("Done did not clear the line: %q", got)
	}
}
