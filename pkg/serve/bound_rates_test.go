package serve

import (
	"math"
	"strings"
	"testing"

	"github.com/infscale/infscale/pkg/recommend"
)

// TestBoundRates: embedded mode's demand rates and latency quantiles past
// the Prometheus reading's bounds (1e6 requests, 1.048576e12 tokens a
// second, 1e7 s) are unknown with a bad_data error each, the mean lengths
// with them: a request counter that jumped to 1e12 between two scrapes
// 2 s apart read as 5e11 requests a second and scaled a target from 1 to
// 5. Values at the bounds stay.
func TestBoundRates(t *testing.T) {
	o := recommend.Unknown()
	o.ArrivalRate, o.PromptTokensRate, o.GenerationTokensRate, o.TTFT = 5e11, 5e21, 100, 2e7
	o.MeanPrompt, o.MeanOutput = recommend.MeanLengths(o.ArrivalRate, o.PromptTokensRate, o.GenerationTokensRate)
	errs := boundRates(&o)
	var got []string
	for _, e := range errs {
		got = append(got, e.Signal+" "+e.Reason)
	}
	if strings.Join(got, ", ") != "arrivals bad_data, prompt_tokens bad_data, ttft bad_data" {
		t.Errorf("errors %v; want arrivals, prompt_tokens and ttft, bad_data", got)
	}
	if !math.IsNaN(o.ArrivalRate) || !math.IsNaN(o.PromptTokensRate) || !math.IsNaN(o.TTFT) || o.GenerationTokensRate != 100 || !math.IsNaN(o.MeanPrompt) || !math.IsNaN(o.MeanOutput) {
		t.Errorf("observation %+v; want the three unknown, generation 100 kept, no mean lengths", o)
	}
	if want := "arrivals 5e+11 above 1e+06 requests a second over the pages"; !strings.Contains(errs[0].Err.Error(), want) {
		t.Errorf("%v; want %q", errs[0].Err, want)
	}
	o = recommend.Unknown()
	o.ArrivalRate, o.PromptTokensRate, o.GenerationTokensRate, o.TTFT = 1e6, 1.048576e12, 0, 1e7
	if errs := boundRates(&o); len(errs) != 0 || o.ArrivalRate != 1e6 || o.TTFT != 1e7 {
		t.Errorf("at the bounds: %v, %+v; want no error, the values kept", errs, o)
	}
}
