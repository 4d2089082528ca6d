package replay

import (
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/infscale/infscale/pkg/recommend"
)

// Knative Pod Autoscaler (KPA) defaults (knative.dev/serving
// config-autoscaler: stable-window 60s, panic-window-percentage 10%,
// panic-threshold-percentage 200, max-scale-down-rate 2, tick-interval 2s,
// scale-to-zero-grace-period 30s, max-scale-up-rate 1000).
const (
	kpaTick          = 2.0
	kpaStable        = 60.0
	kpaPanic         = 6.0
	kpaPanicRatio    = 2.0
	kpaMaxDownRate   = 2.0
	kpaMaxUpRate     = 1000.0
	kpaZeroGrace     = 30.0
	kpaDefaultTarget = 100.0
)

// knativeCtl is the KPA's Scale (knative.dev/serving
// pkg/autoscaler/scaling/autoscaler.go) on concurrency (running + waiting +
// held, as the queue-proxies and the activator report it), sampled every
// 2 s tick: dspc = ceil(stable / target) over the 60 s stable window and
// dppc = ceil(panic / target) over the 6 s panic window, each kept within
// [floor(ready / 2), ceil(1000 × ready)] (max-scale-down-rate 2,
// max-scale-up-rate 1000, ready at least 1); dppc / ready >= 2 (the 200%
// panic threshold) starts or extends panic mode, which ends 60 s after the
// threshold was last crossed; in panic mode the count never decreases. A
// count of 0 is applied only after the 30 s scale-to-zero grace period
// without activity; held requests always activate one replica. C is the
// effective per-replica target (Knative's target × target utilisation).
type knativeCtl struct {
	target       float64
	min, max     int
	samples      []float64 // concurrency at each tick, newest last (stable window)
	panicTime    float64   // when panic mode was last (re)entered; -Inf: not panicking
	maxPanicPods int
	lastActive   float64
}

func (c *knativeCtl) Period() float64 { return kpaTick }

func (c *knativeCtl) warm(n int, _ time.Time) {}

func (c *knativeCtl) Decide(now float64, obs recommend.Observation) int {
	conc := orZero(obs.Held)
	if obs.Reporting > 0 {
		conc += orZero(obs.Running) + orZero(obs.Waiting)
	}
	if conc > 0 {
		c.lastActive = now
	}
	c.samples = append(c.samples, conc)
	if n := int(kpaStable / kpaTick); len(c.samples) > n {
		c.samples = c.samples[len(c.samples)-n:]
	}
	avg := func(n int) float64 {
		n = min(n, len(c.samples))
		s := 0.0
		for _, v := range c.samples[len(c.samples)-n:] {
			s += v
		}
		return s / float64(n)
	}
	ready := math.Max(1, float64(obs.Reporting))
	maxUp := math.Ceil(kpaMaxUpRate * ready)
	maxDown := 0.0
	if obs.Reporting > 0 { // Reachable: the revision has ready pods behind it
		maxDown = math.Floor(ready / kpaMaxDownRate)
	}
	dspc := math.Ceil(avg(int(kpaStable/kpaTick))/c.target - 1e-9)
	dppc := math.Ceil(avg(int(kpaPanic/kpaTick))/c.target - 1e-9)
	stable := int(math.Min(math.Max(dspc, maxDown), maxUp))
	panicD := int(math.Min(math.Max(dppc, maxDown), maxUp))
	over := dppc/ready >= kpaPanicRatio
	switch {
	case over:
		c.panicTime = now
	case !math.IsInf(c.panicTime, -1) && c.panicTime+kpaStable < now:
		c.panicTime, c.maxPanicPods = math.Inf(-1), 0
	}
	want := stable
	if !math.IsInf(c.panicTime, -1) {
		want = max(want, panicD, c.maxPanicPods)
		c.maxPanicPods = want
	}
	if want == 0 && now-c.lastActive < kpaZeroGrace {
		want = 1 // scale-to-zero-grace-period
	}
	if conc > 0 && want == 0 {
		want = 1 // held requests activate
	}
	return min(max(want, c.min), c.max)
}

func orZero(x float64) float64 {
	if math.IsNaN(x) || x < 0 {
		return 0
	}
	return x
}

// parseKnative reads knative:C[,min=N,max=N] (min defaults to 0: Knative
// scales to zero out of the box).
func parseKnative(full, s string, parts []part, off int) (Policy, error) {
	_, arg, _ := strings.Cut(parts[0].text, ":")
	target := kpaDefaultTarget
	if arg != "" {
		t, err := strconv.ParseFloat(arg, 64)
		if err != nil || !(t > 0) || math.IsInf(t, 0) {
			return Policy{}, policyError(full, off+len("knative:")+1, "knative:C wants a target concurrency per replica C > 0, got %q", arg)
		}
		target = t
	}
	lo, hi, err := bounds(full, parts[1:], off, 0)
	if err != nil {
		return Policy{}, err
	}
	return Policy{Name: s, min: max(lo, 1), max: hi, build: func(env) (Controller, error) {
		return &knativeCtl{target: target, min: lo, max: hi, lastActive: math.Inf(-1), panicTime: math.Inf(-1)}, nil
	}}, nil
}

// bounds reads min= and max= options (the only ones baselines take).
func bounds(full string, parts []part, off, defMin int) (lo, hi int, err error) {
	lo, hi = defMin, 100
	once := map[string]int{}
	for _, p := range parts {
		k, v, _ := strings.Cut(p.text, "=")
		n, cerr := strconv.Atoi(v)
		col := off + p.at + 1
		prev, dup := once[k]
		switch {
		case k != "min" && k != "max":
			return 0, 0, policyError(full, col, "%q: this baseline takes only min= and max=", p.text)
		case dup:
			// As an infscale policy's option: the last would win silently.
			return 0, 0, policyError(full, col, "option %s given twice (also at column %d); give it once", k, prev)
		case cerr != nil || n < 0 || n > MaxReplicas:
			return 0, 0, policyError(full, col+len(k)+1, "%s=%q: want a replica count 0..%d", k, v, MaxReplicas)
		case k == "min":
			lo = n
		default:
			hi = n
		}
		once[k] = col
	}
	if hi < 1 || lo > hi {
		return 0, 0, policyError(full, off+1, "want 0 <= min <= max and max >= 1, got min %d max %d", lo, hi)
	}
	return lo, hi, nil
}
