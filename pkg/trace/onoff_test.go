package trace

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// TestOnOffShape checks synthetic:onoff against its definition, worked by
// hand. Defaults over a week: busy 60 s + gap 90 s is a 150 s cycle, 24
// an hour; a busy period without a burst (probability E[exp(-0.5 L)] over
// L ~ Exp(60 s) at 2.5 × 150/60/12.5 = 0.5 bursts/s: 1/(1+30) = 3%) merges
// two gaps, so silent spans of at least the Pareto minimum 90 × 0.5/1.5 =
// 30 s number about 24 × 0.97 = 23.3 an hour; a 30 s silence inside a
// busy period has probability exp(-15), none. With alpha 3 (finite
// variance, so a week's mean is close) the rate is 2.5 req/s.
func TestOnOffShape(t *testing.T) {
	week, err := Parse("synthetic:onoff,duration=7d,alpha=3", Options{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	reqs := readAll(t, week)
	if got := float64(len(reqs)) / (7 * 86400); math.Abs(got-2.5) > 0.1 {
		t.Errorf("alpha 3, a week: %.3f req/s, want 2.5 +- 0.1", got)
	}
	def, err := Parse("synthetic:onoff,duration=7d", Options{Seed: 7})
	if err != nil {
		t.Fatal(err)
	}
	reqs = readAll(t, def)
	long, shortest := 0, math.Inf(1)
	for i := 1; i < len(reqs); i++ {
		if reqs[i].Arrival < reqs[i-1].Arrival {
			t.Fatalf("request %d at %g before %g", i, reqs[i].Arrival, reqs[i-1].Arrival)
		}
		if g := reqs[i].Arrival - reqs[i-1].Arrival; g >= 30 {
			long++
		} else if g > 20 {
			shortest = min(shortest, g)
		}
	}
	if perHour := float64(long) / 168; perHour < 21 || perHour > 25.5 {
		t.Errorf("defaults: %.1f silences >= 30 s an hour, want about 23.3", perHour)
	}
	if !math.IsInf(shortest, 1) {
		t.Errorf("a silence of %.1f s: want none between 20 and 30 s (busy periods have none, gaps start at 30)", shortest)
	}
	for _, q := range reqs {
		if q.Prompt < 192 || q.Prompt > 448 || q.Output < 64 || q.Output > 448 {
			t.Fatalf("request %+v: want the reference token ranges", q)
		}
	}
	// Reproducible, and the seed matters.
	a := readAll(t, OnOff(DefaultOnOff).Source())
	b := readAll(t, OnOff(DefaultOnOff).Source())
	if len(a) != len(b) || a[len(a)/2] != b[len(b)/2] {
		t.Errorf("two passes differ")
	}
	o := DefaultOnOff
	o.Seed = 2
	if c := readAll(t, o.Source()); len(c) == len(a) && c[0] == a[0] {
		t.Errorf("seed 2 gives seed 1's trace")
	}
}

func TestOnOffParseErrors(t *testing.T) {
	for spec, want := range map[string]string{
		"synthetic:onoff,alpha=1":        "field 2 alpha=\"1\"",
		"synthetic:onoff,gap=0":          "field 2 gap=\"0\"",
		"synthetic:onoff,rate=2,burst=0": "field 3 burst=\"0\": want requests per burst",
		"synthetic:onoff,wat=1":          "field 2 \"wat\": unknown key",
		"synthetic:onoff,gap":            "field 2 \"gap\": want key=value",
		"synthetic:onoff,gap=1000h":      "gap=3.6e+06s: want each at most the duration (3600s)",
		"synthetic:onoff,on=2h":          "on=7200s, gap=90s: want each at most the duration",
		"synthetic:onoff,spread=61s":     "spread=61s: want at most the busy period on=60s",
		// Killed for memory: the requests of the bursts within one spread
		// are held at once, 1e8 x 150/60 x 2 = 5e8 of them.
		"synthetic:onoff,rate=1e8":                     "synthetic onoff rate=1e+08, spread=2s, burst=5-20: about 5e+08 requests arrive within one spread (rate x (on + gap) / on x spread, plus the largest burst), more than the 1048576 the generator holds at once; lower rate= or spread= (spread=0: a burst's requests at one instant)",
		"synthetic:onoff,rate=1,burst=2000000-3000000": "about 3e+06 requests arrive within one spread",
	} {
		_, err := Parse(spec, Options{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want it to contain %q", spec, err, want)
		}
	}
	// 500,020 and 20 within a spread; the second's 2e8 requests in all
	// are within MaxGenerated (its hour at 1e8 req/s is not).
	for _, spec := range []string{"synthetic:onoff,rate=1e5,duration=10m", "synthetic:onoff,rate=1e8,spread=0,on=1,gap=1,duration=2"} {
		if _, err := Parse(spec, Options{}); err != nil {
			t.Errorf("%s: %v", spec, err)
		}
	}
	o, err := Parse("synthetic:onoff,gap=300s,seed=3", Options{Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(o.Name, "gap=300s") || !strings.Contains(o.Name, "seed=3") || o.Duration != 3600 {
		t.Errorf("source %q duration %g: want gap=300s, seed=3, 3600 s", o.Name, o.Duration)
	}
}

// held is the requests drawn and not yet returned.
func (r *onoffReader) held() int { return len(r.pend) }

// onoffWhole is synthetic:onoff as it was generated before it streamed:
// each busy period drawn whole into memory, then sorted (stable: equal
// arrivals in the order drawn). The streamed reader must give the same
// requests in the same order (recommended.md's onoff rows replay them).
func onoffWhole(o OnOff) []Request {
	rng, _ := newRNG(o.Seed)
	var out []Request
	for t := 0.0; t < o.Duration; {
		end := t + rng.ExpFloat64()*o.On
		perBurst := o.Rate * (o.On + o.Gap) / o.On / o.Burst.Mean()
		last := t
		var buf []Request
		for b := t + rng.ExpFloat64()/perBurst; b < end; b += rng.ExpFloat64() / perBurst {
			for range o.Burst.Draw(rng) {
				a := b + rng.Float64()*o.Spread
				if a >= o.Duration {
					continue
				}
				buf = append(buf, Request{Arrival: a, Prompt: o.Prompt.Draw(rng), Output: o.Output.Draw(rng)})
				last = max(last, a)
			}
		}
		slices.SortStableFunc(buf, cmpArrival)
		out = append(out, buf...)
		t = max(end, last) + o.GapMin()/math.Pow(1-rng.Float64(), 1/o.Alpha)
	}
	return out
}

// TestOnOffStreams: a busy period was drawn whole into memory before its
// first request was returned, R × (on + gap) requests on average (and
// once per policy replaying it): synthetic:onoff,rate=1e8 (within the
// documented rate bound, less than 1e9) was killed for memory. The reader
// now holds only the requests of the bursts within --spread of the next
// one, and yields the same trace.
func TestOnOffStreams(t *testing.T) {
	for _, spec := range []string{
		"onoff", "onoff,seed=5,duration=2h", "onoff,spread=0,burst=3-9", "onoff,spread=30,duration=10m",
		"onoff,burst=1,duration=100", "onoff,rate=40,on=5,gap=3,alpha=1.1,duration=15m", "onoff,spread=5,on=20,gap=30,duration=61",
	} {
		o, err := parseOnOff(spec, 1)
		if err != nil {
			t.Fatal(err)
		}
		got, want := readAll(t, o.Source()), onoffWhole(o)
		if len(got) != len(want) {
			t.Fatalf("%s: %d requests, want %d", spec, len(got), len(want))
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("%s: request %d = %+v, want %+v", spec, i, got[i], want[i])
			}
		}
	}
	// 1000 req/s with the default 60 s busy and 90 s gap: a busy period
	// holds 150,000 requests on average; bursts (12.5 requests, 2 s
	// spread) start at 1000 × 150/60/12.5 = 200 a second, so about
	// 200 × 2 × 12.5 = 5,000 requests are drawn but not yet due.
	o, err := parseOnOff("onoff,rate=1000,duration=1h", 1)
	if err != nil {
		t.Fatal(err)
	}
	rd, err := o.Source().Open()
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	most := 0
	for range 50000 {
		if _, err := rd.Next(); err != nil {
			t.Fatal(err)
		}
		most = max(most, rd.(*capped).Reader.(*onoffReader).held())
	}
	if most > 20000 {
		t.Errorf("the reader held %d requests at once, want about 5,000 (those of the bursts within the spread)", most)
	}
}
