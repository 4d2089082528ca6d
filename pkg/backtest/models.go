package backtest

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// modelOverlap is how long two models' success series may serve at once
// before concurrentModels warns: a rollout from one model to the next
// runs both for its minutes, two Deployments for the whole range.
const modelOverlap = time.Hour

// concurrentModels says, as a warning, when the success counter's series
// name two or more models (the model_name label vLLM and SGLang export,
// else model) serving at the same time for more than modelOverlap: the
// selector matches several Deployments, whose summed traffic the replay
// sizes on one replica; "" otherwise (one model, or one after another).
// vals is a range query's answer at step: the time two models serve at
// once is the steps both have a sample at, each counted as step (a canary
// that came back, or a rollout rolled back, is not the span between its
// first and last sample).
func concurrentModels(vals model.Matrix, step time.Duration) string {
	if step <= 0 {
		return ""
	}
	name := func(s *model.SampleStream) (string, bool) {
		n, ok := s.Metric["model_name"]
		if !ok {
			n, ok = s.Metric["model"]
		}
		return string(n), ok && len(s.Values) > 0
	}
	var lo, hi model.Time
	seen := false
	for _, s := range vals {
		if _, ok := name(s); ok {
			a, b := s.Values[0].Timestamp, s.Values[len(s.Values)-1].Timestamp
			if !seen || a < lo {
				lo = a
			}
			if !seen || b > hi {
				hi = b
			}
			seen = true
		}
	}
	if !seen {
		return ""
	}
	// One flag per step of the range, per model: O(samples + models² ×
	// steps), a week at 1 m is 10,081 steps.
	steps := int(hi.Sub(lo)/step) + 1
	at := map[string][]bool{}
	for _, s := range vals {
		n, ok := name(s)
		if !ok {
			continue
		}
		b := at[n]
		if b == nil {
			b = make([]bool, steps)
			at[n] = b
		}
		for _, p := range s.Values {
			b[min(max(int((p.Timestamp.Sub(lo)+step/2)/step), 0), steps-1)] = true
		}
	}
	names := make([]string, 0, len(at))
	for n := range at {
		names = append(names, n)
	}
	slices.Sort(names)
	var both []string
	from, to := -1, -1
	for i, a := range names {
		for _, b := range names[i+1:] {
			shared, first, last := 0, -1, -1
			for j, x := range at[a] {
				if x && at[b][j] {
					shared++
					if first < 0 {
						first = j
					}
					last = j
				}
			}
			if time.Duration(shared)*step <= modelOverlap {
				continue
			}
			if from < 0 || first < from {
				from = first
			}
			to = max(to, last)
			for _, n := range []string{a, b} {
				if !slices.Contains(both, n) {
					both = append(both, n)
				}
			}
		}
	}
	if len(both) == 0 {
		return ""
	}
	slices.Sort(both)
	stamp := func(j int) string {
		return lo.Add(time.Duration(j) * step).Time().UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("the success counter's series name %d models serving at once (%s, together from %s to %s): the selector matches several Deployments, and the replay sizes their summed traffic on one replica (--gpu, --model); narrow --selector to one (e.g. add model_name=%q)",
		len(both), `"`+strings.Join(both, `", "`)+`"`, stamp(from), stamp(to), both[0])
}
