package trace

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// Synthetic describes steady Poisson traffic.
type Synthetic struct {
	// Rate is the mean arrival rate in requests per second (> 0).
	Rate float64
	// Duration is the span in seconds (> 0).
	Duration float64
	// Prompt and Output are the token-length distributions.
	Prompt, Output Tokens
	// Seed fixes the draws.
	Seed uint64
}

// DefaultSynthetic is what unset synthetic fields take: 10 req/s for an
// hour, the reference trace's token distributions, seed 1.
var DefaultSynthetic = Synthetic{Rate: 10, Duration: 3600, Prompt: ReferenceShape.Prompt, Output: ReferenceShape.Output, Seed: 1}

// Source generates the traffic.
func (s Synthetic) Source() Source {
	shape := Shape{Pieces: []Piece{{Start: 0, End: s.Duration, From: s.Rate, To: s.Rate}}, Prompt: s.Prompt, Output: s.Output}
	return shape.Source(s.String(), s.Seed)
}

// String is the spec form.
func (s Synthetic) String() string {
	return fmt.Sprintf("synthetic:poisson,rate=%g,duration=%gs,prompt=%s,output=%s,seed=%d", s.Rate, s.Duration, s.Prompt, s.Output, s.Seed)
}

// ParseSynthetic reads "poisson,rate=R,duration=D,prompt=P,output=O,seed=S"
// (the part after "synthetic:"); every key is optional (DefaultSynthetic),
// duration takes seconds or a Go duration with a d (day) unit allowed
// ("3600", "1h", "7d"), prompt and output take N or LO-HI (ParseTokens).
// Errors name the field's position (1-based, comma-separated) and what is
// allowed.
func ParseSynthetic(spec string, seed uint64) (Synthetic, error) {
	s := DefaultSynthetic
	s.Seed = seed
	fields := strings.Split(spec, ",")
	if fields[0] != "poisson" {
		return s, fmt.Errorf("synthetic field 1 %q: want the process name poisson, step, diurnal or onoff", fields[0])
	}
	for i, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		pos := i + 2
		if !ok {
			return s, fmt.Errorf("synthetic field %d %q: want key=value with key rate, duration, prompt, output or seed", pos, f)
		}
		var err error
		switch k {
		case "rate":
			s.Rate, err = strconv.ParseFloat(v, 64)
			if err == nil && !(s.Rate > 0 && s.Rate < 1e9) {
				err = fmt.Errorf("out of range")
			}
			if err != nil {
				return s, fmt.Errorf("synthetic field %d rate=%q: want requests per second, more than 0 and less than 1e9", pos, v)
			}
		case "duration":
			d, err := ParseSeconds(v)
			if err != nil || !(d > 0 && d < 1e9) { // as step, diurnal and onoff: a finite replay
				return s, fmt.Errorf("synthetic field %d duration=%q: want a span > 0 and less than 1e9 s (seconds, or 90s, 1h, 7d)", pos, v)
			}
			s.Duration = d
		case "prompt", "output":
			t, err := ParseTokens(v)
			if err != nil {
				return s, fmt.Errorf("synthetic field %d %s=%v", pos, k, err)
			}
			if k == "prompt" {
				s.Prompt = t
			} else {
				s.Output = t
			}
		case "seed":
			s.Seed, err = strconv.ParseUint(v, 10, 64)
			if err != nil {
				return s, fmt.Errorf("synthetic field %d seed=%q: want an unsigned integer", pos, v)
			}
		default:
			return s, fmt.Errorf("synthetic field %d %q: unknown key, want rate, duration, prompt, output or seed", pos, k)
		}
	}
	return s, nil
}

// ParseSeconds reads a span: a plain number of seconds ("90", "1.5") or a Go
// duration, with "d" (24 h) allowed as a leading unit ("7d", "1d12h"); a
// sign only at the front, negating the whole span ("-1d12h" is -129600).
func ParseSeconds(v string) (float64, error) {
	if f, err := strconv.ParseFloat(v, 64); err == nil {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return 0, fmt.Errorf("%q: want a finite number of seconds or a duration like 90s, 1h, 7d", v)
		}
		return f, nil
	}
	days, rest, dayPart := 0.0, v, false
	if i := strings.Index(v, "d"); i > 0 {
		n, err := strconv.ParseFloat(v[:i], 64)
		if err != nil || math.IsNaN(n) || math.IsInf(n, 0) {
			return 0, fmt.Errorf("%q: want seconds or a duration like 90s, 1h, 7d", v)
		}
		days, rest, dayPart = n, v[i+1:], true
		if rest != "" && (rest[0] == '-' || rest[0] == '+') { // 1d-2h: one sign, at the front
			return 0, fmt.Errorf("%q: want seconds or a duration like 90s, 1h, 7d (a sign only at the front: -1d12h)", v)
		}
	}
	var d time.Duration
	if rest != "" || !dayPart {
		var err error
		if d, err = time.ParseDuration(rest); err != nil {
			return 0, fmt.Errorf("%q: want seconds or a duration like 90s, 1h, 7d", rest)
		}
	}
	// A leading minus negates the whole span, as in Go's -1h30m: -1d12h
	// is -36 h, not -12 h.
	if dayPart && strings.HasPrefix(v, "-") {
		d = -d
	}
	// A finite day count past 2e303 overflows to Inf seconds.
	if s := days*86400 + d.Seconds(); !math.IsInf(s, 0) {
		return s, nil
	}
	return 0, fmt.Errorf("%q: want a finite span: seconds or a duration like 90s, 1h, 7d", v)
}
