package trace

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
)

// AmplifyBursts makes a trace's bursts k times as large (k >= 1): time is
// cut into windows of w seconds, and a window with more arrivals than the
// baseline (an exponential moving average of the previous windows' counts,
// with a 10-window memory) gets (k-1) x its excess again: each of its
// requests is copied floor(p) times and once more with probability
// frac(p), p = (k-1) x excess / count, the copy arriving with the original.
// Quiet windows are left alone. The draws come from seed, so a pass is
// reproducible.
func AmplifyBursts(s Source, k, w float64, seed uint64) Source {
	if k <= 1 {
		return s
	}
	return NewSource(fmt.Sprintf("%s bursts x%g", s.Name, k), s.Duration, func() (Reader, error) {
		r, err := s.Open()
		if err != nil {
			return nil, err
		}
		return &bursty{in: r, k: k, w: w, rng: rand.New(rand.NewPCG(seed, 0x6275727374))}, nil
	})
}

type bursty struct {
	in       Reader
	k, w     float64
	rng      *rand.Rand
	base     float64 // moving average of window counts
	next     Request // read ahead: the first request of the next window
	have     bool
	eof      bool
	out      []Request
	cur      []Request // the window being read (reused)
	i        int
	win      int64 // the last window read
	baseline bool  // base is set
}

func (b *bursty) Close() error { return b.in.Close() }

func (b *bursty) Next() (Request, error) {
	for b.i >= len(b.out) {
		if b.eof && !b.have {
			return Request{}, io.EOF
		}
		if err := b.fill(); err != nil {
			return Request{}, err
		}
	}
	b.i++
	return b.out[b.i-1], nil
}

// fill reads one window and amplifies it.
func (b *bursty) fill() error {
	b.out, b.i = b.out[:0], 0
	win := b.cur[:0]
	defer func() { b.cur = win[:0] }()
	if !b.have {
		q, err := b.in.Next()
		if err == io.EOF {
			b.eof = true
			return nil
		}
		if err != nil {
			return err
		}
		b.next, b.have = q, true
	}
	id := int64(math.Floor(b.next.Arrival / b.w))
	for b.have && int64(math.Floor(b.next.Arrival/b.w)) == id {
		win = append(win, b.next)
		q, err := b.in.Next()
		switch {
		case err == io.EOF:
			b.have, b.eof = false, true
		case err != nil:
			return err
		default:
			b.next = q
		}
	}
	// Windows skipped since the last one had no arrivals.
	n := float64(len(win))
	const memory = 10.0
	if !b.baseline {
		b.base, b.baseline = n, true
	} else {
		for j := b.win + 1; j < id; j++ {
			b.base += (0 - b.base) / memory
		}
	}
	b.win = id
	p := 0.0
	if excess := n - b.base; excess > 0 && n > 0 {
		p = (b.k - 1) * excess / n
	}
	b.base += (n - b.base) / memory
	for _, q := range win {
		b.out = append(b.out, q)
		c := int(p)
		if b.rng.Float64() < p-float64(c) {
			c++
		}
		for range c {
			b.out = append(b.out, q)
		}
	}
	return nil
}
