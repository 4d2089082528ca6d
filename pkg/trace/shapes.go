package trace

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// StepShape is the synthetic step trace: Low req/s, then High req/s from
// At for For seconds, then Low again until Duration (a sudden burst, the
// case a cold start cannot follow).
type StepShape struct {
	Low, High, At, For, Duration float64
	Prompt, Output               Tokens
}

// DefaultStep is synthetic:step's defaults: 3 -> 25 -> 3 req/s, ten minutes
// each, the reference trace's token lengths.
var DefaultStep = StepShape{Low: 3, High: 25, At: 600, For: 600, Duration: 1800, Prompt: ReferenceShape.Prompt, Output: ReferenceShape.Output}

// Shape is the piecewise-constant rate.
func (s StepShape) Shape() Shape {
	end := min(s.At+s.For, s.Duration)
	var ps []Piece
	add := func(a, b, r float64) {
		if b > a {
			ps = append(ps, Piece{Start: a, End: b, From: r, To: r})
		}
	}
	add(0, min(s.At, s.Duration), s.Low)
	add(s.At, end, s.High)
	add(end, s.Duration, s.Low)
	return Shape{Pieces: ps, Prompt: s.Prompt, Output: s.Output}
}

// DiurnalShape is the synthetic daily cycle: the rate follows a cosine
// from Trough at PeakHour - 12 h to Peak at PeakHour (hours of second 0's
// day), linear within each quarter hour, for Duration seconds.
type DiurnalShape struct {
	Trough, Peak, PeakHour, Duration float64
	Prompt, Output                   Tokens
}

// DefaultDiurnal is synthetic:diurnal's defaults: one day from 3 req/s at
// 02:00 to 30 req/s at 14:00, the reference trace's token lengths.
var DefaultDiurnal = DiurnalShape{Trough: 3, Peak: 30, PeakHour: 14, Duration: 86400, Prompt: ReferenceShape.Prompt, Output: ReferenceShape.Output}

// diurnalPiece is the length of one linear piece of the daily cycle.
const diurnalPiece = 900.0

// Rate is the rate at second t of the cosine (before the linear pieces).
func (s DiurnalShape) Rate(t float64) float64 {
	h := t/3600 - s.PeakHour
	return s.Trough + (s.Peak-s.Trough)*(1+math.Cos(2*math.Pi*h/24))/2
}

// Shape is the cycle as linear pieces between the quarter hours.
func (s DiurnalShape) Shape() Shape {
	var ps []Piece
	for a := 0.0; a < s.Duration; a += diurnalPiece {
		b := min(a+diurnalPiece, s.Duration)
		ps = append(ps, Piece{Start: a, End: b, From: s.Rate(a), To: s.Rate(b)})
	}
	return Shape{Pieces: ps, Prompt: s.Prompt, Output: s.Output}
}

// parseShaped reads synthetic:step,... and synthetic:diurnal,... (ok is
// false for another process name). Keys: step low, high (req/s), at, for,
// duration (spans); diurnal trough, peak (req/s), peakhour (0..24),
// duration; both prompt, output (N or LO-HI tokens) and seed. Errors name
// the field's position as ParseSynthetic's do.
func parseShaped(spec string, seed uint64) (src Source, ok bool, err error) {
	fields := strings.Split(spec, ",")
	var nums map[string]*float64
	var prompt, output *Tokens
	var shape func() Shape
	switch fields[0] {
	case "step":
		s := DefaultStep
		nums = map[string]*float64{"low": &s.Low, "high": &s.High, "at": &s.At, "for": &s.For, "duration": &s.Duration}
		prompt, output, shape = &s.Prompt, &s.Output, func() Shape { return s.Shape() }
		defer func() {
			if err == nil && !(s.At < s.Duration) {
				err = fmt.Errorf("synthetic step: at=%gs is not before duration=%gs", s.At, s.Duration)
			}
		}()
	case "diurnal":
		s := DefaultDiurnal
		nums = map[string]*float64{"trough": &s.Trough, "peak": &s.Peak, "peakhour": &s.PeakHour, "duration": &s.Duration}
		prompt, output, shape = &s.Prompt, &s.Output, func() Shape { return s.Shape() }
		defer func() {
			if err == nil && !(s.PeakHour >= 0 && s.PeakHour <= 24) {
				err = fmt.Errorf("synthetic diurnal: peakhour=%g: want an hour 0..24", s.PeakHour)
			}
			if err == nil && s.Trough > s.Peak {
				// trough=40,peak=30 replayed a cycle whose "peak" hour
				// was its quietest.
				err = fmt.Errorf("synthetic diurnal: trough=%g is above peak=%g: want trough <= peak (req/s at peakhour - 12h and at peakhour; move peakhour to move the peak)", s.Trough, s.Peak)
			}
		}()
	default:
		return Source{}, false, nil
	}
	keys := "low, high, at, for, duration, prompt, output or seed"
	if fields[0] == "diurnal" {
		keys = "trough, peak, peakhour, duration, prompt, output or seed"
	}
	for i, f := range fields[1:] {
		pos := i + 2
		k, v, kv := strings.Cut(f, "=")
		if !kv {
			return Source{}, true, fmt.Errorf("synthetic field %d %q: want key=value with key %s", pos, f, keys)
		}
		switch p := nums[k]; {
		case p != nil:
			var x float64
			var err error
			if k == "low" || k == "high" || k == "trough" || k == "peak" || k == "peakhour" {
				x, err = strconv.ParseFloat(v, 64)
			} else {
				x, err = ParseSeconds(v)
			}
			if err != nil || !(x >= 0 && x < 1e9) || (k == "duration" && x == 0) {
				return Source{}, true, fmt.Errorf("synthetic field %d %s=%q: want a finite number >= 0 (rates in req/s, spans in seconds or 90s, 1h, 7d; duration > 0)", pos, k, v)
			}
			*p = x
		case k == "prompt" || k == "output":
			t, err := ParseTokens(v)
			if err != nil {
				return Source{}, true, fmt.Errorf("synthetic field %d %s=%v", pos, k, err)
			}
			if k == "prompt" {
				*prompt = t
			} else {
				*output = t
			}
		case k == "seed":
			seed, err = strconv.ParseUint(v, 10, 64)
			if err != nil {
				return Source{}, true, fmt.Errorf("synthetic field %d seed=%q: want an unsigned integer", pos, v)
			}
		default:
			return Source{}, true, fmt.Errorf("synthetic field %d %q: unknown key, want %s", pos, k, keys)
		}
	}
	return shape().Source("synthetic:"+spec, seed), true, nil
}
