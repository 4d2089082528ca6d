package fleet

import (
	"sync"
	"time"
)

// stream connects a request in an engine to the HTTP handler waiting for
// its tokens. The engine appends token times and marks the end; the handler
// wakes on wake and writes what is new. A nil *stream (a simulated
// arrival) ignores every call.
type stream struct {
	mu     sync.Mutex
	times  []time.Time // when each token was produced
	done   bool
	cancel bool
	wake   chan struct{} // capacity 1: a pending wake-up
}

func newStream() *stream { return &stream{wake: make(chan struct{}, 1)} }

func (s *stream) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// token records one output token produced at t.
func (s *stream) token(t time.Time) {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.times = append(s.times, t)
	s.mu.Unlock()
	s.signal()
}

// finish marks the request complete (or dropped).
func (s *stream) finish() {
	if s == nil {
		return
	}
	s.mu.Lock()
	s.done = true
	s.mu.Unlock()
	s.signal()
}

// abandon marks that the client went away; the engine drops the request
// at its next phase boundary.
func (s *stream) abandon() {
	s.mu.Lock()
	s.cancel = true
	s.mu.Unlock()
}

func (s *stream) canceled() bool {
	if s == nil {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cancel
}

// since returns how many tokens exist beyond the first n, and whether the
// request is complete.
func (s *stream) since(n int) (more int, done bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.times) - n, s.done
}
