// Package buftest (a test harness) is a bytes.Buffer that goroutines may
// write while another reads it: a log or a child process's output captured
// by a test.
package buftest

import (
	"bytes"
	"strings"
	"sync"
)

// Buffer is a bytes.Buffer safe for concurrent Write and String. Its zero
// value is empty and unbounded; with Limit > 0 a Write that finds more
// than Limit bytes held first drops all but the newest Limit/2.
type Buffer struct {
	// Limit is the most bytes kept before a Write trims (0: no limit).
	Limit int

	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p; it never fails.
func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.Limit > 0 && b.b.Len() > b.Limit {
		rest := b.b.Bytes()[b.b.Len()-b.Limit/2:]
		b.b = *bytes.NewBuffer(append([]byte(nil), rest...))
	}
	return b.b.Write(p)
}

// String is a copy of what the buffer holds.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Clone(b.b.String())
}
