package buftest

import (
	"strings"
	"sync"
	"testing"
)

// TestConcurrentWrites: 8 writers of 1,000 lines of 10 bytes each while a
// reader reads: 80,000 bytes, every line whole.
func TestConcurrentWrites(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 1000 {
				b.Write([]byte("123456789\n"))
			}
		})
	}
	wg.Go(func() {
		for range 100 {
			_ = b.String()
		}
	})
	wg.Wait()
	s := b.String()
	if len(s) != 80000 || strings.Count(s, "123456789\n") != 8000 {
		t.Fatalf("%d bytes, %d whole lines; want 80000 and 8000", len(s), strings.Count(s, "123456789\n"))
	}
}

// TestLimit: with Limit 100, after 30 writes of 10 bytes a write that finds
// 110 held keeps the newest 50 and appends 10: 60; the next ones grow it
// to 110 again before the next trim.
func TestLimit(t *testing.T) {
	b := Buffer{Limit: 100}
	for i := range 12 {
		b.Write([]byte{'a' + byte(i), '2', '3', '4', '5', '6', '7', '8', '9', '\n'})
	}
	// Writes 1..11 hold 110 bytes; the 12th finds 110 > 100, keeps the
	// last 50 (writes 7..11: g..k) and appends its own (l).
	if got, want := b.String(), "g23456789\nh23456789\ni23456789\nj23456789\nk23456789\nl23456789\n"; got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}
