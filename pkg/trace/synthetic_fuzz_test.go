package trace

import (
	"io"
	"math"
	"strings"
	"testing"
)

// FuzzSynthetic: any synthetic:... spec (and any --window or duration
// text) is an error naming the field, or a trace whose first requests
// come in arrival order at finite times >= 0 with prompts and outputs of
// at least 1 token; a span that reads is finite.
func FuzzSynthetic(f *testing.F) {
	for _, s := range []string{
		"poisson", "poisson,rate=3,duration=7d", "poisson,rate=5000,duration=2h,prompt=100-2000,output=1-500,seed=9",
		"step", "step,low=1,high=20,at=600,for=300,duration=1h", "diurnal,duration=7d", "diurnal,trough=1,peak=9,peakhour=14,duration=2d",
		"onoff", "onoff,gap=90s", "onoff,rate=2,on=30s,gap=5m,alpha=1.5,burst=1-20,spread=2s,duration=1h,prompt=10,output=5,seed=3",
		"poisson,rate=2,rate=3", "poisson,duration=1d12h", "10m:1h",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		if s, err := ParseSeconds(spec); err == nil && (math.IsNaN(s) || math.IsInf(s, 0)) {
			t.Fatalf("ParseSeconds(%q) = %v", spec, s)
		}
		if a, b, err := ParseWindow(spec); err == nil && (math.IsInf(a, 0) || math.IsInf(b, 0) || math.IsNaN(a) || math.IsNaN(b)) {
			t.Fatalf("ParseWindow(%q) = %v, %v", spec, a, b)
		}
		if s, err := ParseSynthetic(spec, 1); err == nil && !(s.Duration > 0 && s.Duration < 1e9) {
			t.Fatalf("ParseSynthetic(%q): duration %v, want a span > 0 and < 1e9 s as the other shapes", spec, s.Duration)
		}
		src, err := Parse("synthetic:"+spec, Options{Seed: 1})
		if err != nil {
			if !strings.Contains(err.Error(), "synthetic") {
				t.Fatalf("%q: error without the spec's kind: %v", spec, err)
			}
			return
		}
		r, err := src.Open()
		if err != nil {
			t.Fatalf("%q: open: %v", spec, err)
		}
		defer r.Close()
		last := 0.0
		for range 2000 {
			q, err := r.Next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%q: %v", spec, err)
			}
			if !(q.Arrival >= last) || math.IsInf(q.Arrival, 0) || q.Prompt < 1 || q.Output < 1 {
				t.Fatalf("%q: request %+v after %v", spec, q, last)
			}
			last = q.Arrival
		}
	})
}
