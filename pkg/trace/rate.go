package trace

import (
	"io"
	"math"
	"math/rand/v2"
)

// Piece is one piece of a piecewise-linear arrival rate: from Start to End
// seconds the rate goes linearly from From to To requests per second.
type Piece struct {
	Start, End float64
	From, To   float64
}

// count is the expected arrivals in the piece (the integral of the rate).
func (p Piece) count() float64 { return (p.From + p.To) / 2 * (p.End - p.Start) }

// Shape is a non-homogeneous Poisson arrival process with a piecewise-linear
// rate and token-length distributions.
type Shape struct {
	// Pieces are in time order and do not overlap; gaps have rate 0.
	Pieces []Piece
	// Prompt and Output are the token-length distributions.
	Prompt, Output Tokens
}

// Expected is the expected number of requests (the integral of the rate).
func (s Shape) Expected() float64 {
	var n float64
	for _, p := range s.Pieces {
		n += p.count()
	}
	return n
}

// End is the end of the last piece in seconds.
func (s Shape) End() float64 {
	if len(s.Pieces) == 0 {
		return 0
	}
	return s.Pieces[len(s.Pieces)-1].End
}

// Source generates the process with the given seed: the same seed gives the
// same requests. Arrivals come from inverting the cumulative rate: each gap
// is an Exp(1) draw of cumulative intensity, then the token lengths are drawn.
func (s Shape) Source(name string, seed uint64) Source {
	expected := s.Expected()
	src := NewSource(name, s.End(), func() (Reader, error) {
		rng, pcg := newRNG(seed)
		return capDraws(&shapeReader{shape: s, rng: rng, pcg: pcg}, name, expected), nil
	})
	src.expected = expected
	return src
}

type shapeReader struct {
	shape Shape
	rng   *rand.Rand
	pcg   *rand.PCG // rng's state (fork)
	piece int       // current piece
	t     float64   // last arrival
}

func (r *shapeReader) Close() error { return nil }

// fork is a copy of the pass at its position (forker).
func (r *shapeReader) fork() Reader {
	c := *r
	c.rng, c.pcg = copyRNG(r.pcg)
	return &c
}

func (r *shapeReader) Next() (Request, error) {
	need := r.rng.ExpFloat64() // cumulative intensity to the next arrival
	for r.piece < len(r.shape.Pieces) {
		p := r.shape.Pieces[r.piece]
		if r.t < p.Start {
			r.t = p.Start
		}
		// Rate at r.t and the intensity left in this piece.
		slope := 0.0
		if p.End > p.Start {
			slope = (p.To - p.From) / (p.End - p.Start)
		}
		a := p.From + slope*(r.t-p.Start)
		left := (a + p.To) / 2 * (p.End - r.t)
		if need > left {
			need -= left
			r.t = p.End
			r.piece++
			continue
		}
		// Solve a*x + slope*x^2/2 = need for x >= 0.
		var x float64
		if math.Abs(slope) < 1e-12 {
			x = need / a
		} else {
			disc := a*a + 2*slope*need
			if disc < 0 {
				disc = 0
			}
			x = 2 * need / (a + math.Sqrt(disc)) // stable form of (-a+sqrt(disc))/slope
		}
		r.t = min(r.t+x, p.End)
		return Request{Arrival: r.t, Prompt: r.shape.Prompt.Draw(r.rng), Output: r.shape.Output.Draw(r.rng)}, nil
	}
	return Request{}, io.EOF
}
