package trace

import (
	"errors"
	"sync"

	"github.com/infscale/infscale/internal/crashlog"
)

// ReadAheadBatch is the number of requests ReadAhead's goroutine reads per
// batch: 32 KiB at 16 bytes a request; a pass holds four batches at most
// (one being filled, two queued, one being read).
const ReadAheadBatch = 2048

// ReadAhead wraps rd so that a goroutine reads its requests ahead, in
// batches of ReadAheadBatch, while the caller consumes the previous batch:
// generating or parsing a trace then runs on a second core beside the
// replay. The requests and the error that ends the pass (io.EOF, or a
// file's line error) come out exactly as rd gives them. Close stops the
// goroutine, waits for it, then closes rd; the wrapper is for one
// consumer goroutine, as any Reader.
func ReadAhead(rd Reader) Reader {
	a := &readAhead{rd: rd, full: make(chan batch, 2), free: make(chan []Request, 3), done: make(chan struct{})}
	a.wg.Add(1)
	go func() { defer crashlog.Recover(); a.fill() }() // serve's tuning replays
	return a
}

type batch struct {
	reqs []Request
	err  error // after reqs: io.EOF or the reader's error; nil for more
}

type readAhead struct {
	rd   Reader
	full chan batch
	free chan []Request
	done chan struct{}
	wg   sync.WaitGroup
	once sync.Once

	cur []Request
	i   int
	err error
}

// fill reads rd in batches until it ends or Close is called.
func (a *readAhead) fill() {
	defer a.wg.Done()
	for {
		var buf []Request
		select {
		case buf = <-a.free:
		default:
			buf = make([]Request, 0, ReadAheadBatch)
		}
		b := batch{reqs: buf[:0]}
		for len(b.reqs) < ReadAheadBatch {
			q, err := a.rd.Next()
			if err != nil {
				b.err = err
				break
			}
			b.reqs = append(b.reqs, q)
		}
		select {
		case a.full <- b:
		case <-a.done:
			return
		}
		if b.err != nil {
			return
		}
	}
}

// Next returns the next request, or the error that ended rd's pass (again
// on every later call).
func (a *readAhead) Next() (Request, error) {
	for a.i >= len(a.cur) {
		if a.err != nil {
			return Request{}, a.err
		}
		if a.cur != nil {
			select {
			case a.free <- a.cur:
			default:
			}
		}
		select {
		case b := <-a.full:
			a.cur, a.i, a.err = b.reqs, 0, b.err
		case <-a.done:
			return Request{}, errors.New("trace: Next after Close")
		}
	}
	q := a.cur[a.i]
	a.i++
	return q, nil
}

// Close stops the read-ahead goroutine, waits for it, and closes rd.
func (a *readAhead) Close() error {
	a.once.Do(func() { close(a.done) })
	a.wg.Wait()
	return a.rd.Close()
}
