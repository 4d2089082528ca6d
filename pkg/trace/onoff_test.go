package trace

import (
	"math"
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
	} {
		_, err := Parse(spec, Options{})
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want it to contain %q", spec, err, want)
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
