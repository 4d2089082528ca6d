package trace

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// Tokens is a token-length distribution: Lo == Hi is a fixed length,
// otherwise uniform over the integers Lo..Hi inclusive.
type Tokens struct {
	Lo, Hi int32
}

// Mean is the distribution's mean in tokens.
func (d Tokens) Mean() float64 { return (float64(d.Lo) + float64(d.Hi)) / 2 }

// Draw returns one length from rng.
func (d Tokens) Draw(rng *rand.Rand) int32 {
	if d.Hi <= d.Lo {
		return d.Lo
	}
	return d.Lo + int32(rng.Int64N(int64(d.Hi-d.Lo)+1))
}

// String is the spec form: "N" or "LO-HI".
func (d Tokens) String() string {
	if d.Lo == d.Hi {
		return strconv.Itoa(int(d.Lo))
	}
	return fmt.Sprintf("%d-%d", d.Lo, d.Hi)
}

// ParseTokens reads "N" (fixed) or "LO-HI" (uniform) with 1 <= LO <= HI <= 2^31-1.
func ParseTokens(s string) (Tokens, error) {
	lo, hi, isRange := strings.Cut(s, "-")
	if !isRange {
		hi = lo
	}
	a, err1 := strconv.ParseInt(strings.TrimSpace(lo), 10, 32)
	b, err2 := strconv.ParseInt(strings.TrimSpace(hi), 10, 32)
	if err1 != nil || err2 != nil || a < 1 || b < a {
		return Tokens{}, fmt.Errorf("%q: want a token count N >= 1 or a uniform range LO-HI with 1 <= LO <= HI", s)
	}
	return Tokens{Lo: int32(a), Hi: int32(b)}, nil
}

// newRNG is the package's seeded source: PCG with the seed and a fixed
// stream constant, so a seed means the same trace on every platform. The
// PCG is returned too, for a pass that is copied (copyRNG).
func newRNG(seed uint64) (*rand.Rand, *rand.PCG) {
	p := rand.NewPCG(seed, 0x696e667363616c65) // "infscale"
	return rand.New(p), p
}

// copyRNG is a generator over a copy of p's state: it draws what p would
// next, and drawing from either leaves the other as it was. (A rand.Rand
// holds no state of its own: the PCG is all of it.)
func copyRNG(p *rand.PCG) (*rand.Rand, *rand.PCG) {
	c := *p
	return rand.New(&c), &c
}
