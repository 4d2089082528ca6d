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
func concurrentModels(vals model.Matrix) string {
	type span struct{ from, to model.Time }
	spans := map[string]span{}
	for _, s := range vals {
		name, ok := s.Metric["model_name"]
		if !ok {
			name, ok = s.Metric["model"]
		}
		if !ok || len(s.Values) == 0 {
			continue
		}
		from, to := s.Values[0].Timestamp, s.Values[len(s.Values)-1].Timestamp
		if sp, seen := spans[string(name)]; seen {
			from, to = min(from, sp.from), max(to, sp.to)
		}
		spans[string(name)] = span{from, to}
	}
	names := make([]string, 0, len(spans))
	for n := range spans {
		names = append(names, n)
	}
	slices.Sort(names)
	var both []string
	var from, to model.Time
	for i, a := range names {
		for _, b := range names[i+1:] {
			lo, hi := max(spans[a].from, spans[b].from), min(spans[a].to, spans[b].to)
			if hi.Sub(lo) <= modelOverlap {
				continue
			}
			if len(both) == 0 || lo < from {
				from = lo
			}
			to = max(to, hi)
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
	return fmt.Sprintf("the success counter's series name %d models serving at once (%s, together from %s to %s): the selector matches several Deployments, and the replay sizes their summed traffic on one replica (--gpu, --model); narrow --selector to one (e.g. add model_name=%q)",
		len(both), `"`+strings.Join(both, `", "`)+`"`, from.Time().UTC().Format(time.RFC3339), to.Time().UTC().Format(time.RFC3339), both[0])
}
