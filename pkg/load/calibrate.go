package load

import (
	"context"
	"errors"
	"fmt"

	"github.com/infscale/infscale/pkg/replica"
)

// Calibrate fits base's free parameters (replica.Fit) to a concurrency
// sweep's points: each point of concurrency c up to fitMax (and up to the
// base's batch limit) is a decode step of batch c with c × (prompt +
// max_tokens / 2) tokens of context (the sequences are halfway through
// their output on average) taking the point's ITL p50; the points above
// fitMax are held out and predicted. The prefill line comes from two
// concurrency-1 runs with no decoding to speak of (max_tokens 2): prompts
// of cfg.PromptTokens and 3 × that (their predictions filled in).
func Calibrate(ctx context.Context, base replica.Config, cfg Config, points []Summary, fitMax int) (replica.Calibration, error) {
	r, err := replica.New(base)
	if err != nil {
		return replica.Calibration{}, err
	}
	if cfg.PromptTokens <= 0 {
		cfg.PromptTokens = 512
	}
	if cfg.MaxTokens <= 0 {
		cfg.MaxTokens = 128
	}
	perSeq := int64(cfg.PromptTokens + cfg.MaxTokens/2)
	var fit, held []replica.StepPoint
	for _, p := range points {
		if p.Concurrency < 1 || p.Concurrency > r.MaxBatch() || p.Requests == 0 || !(float64(p.ITLP50) > 0) {
			continue
		}
		sp := replica.StepPoint{Batch: p.Concurrency, ContextTokens: int64(p.Concurrency) * perSeq, StepS: float64(p.ITLP50)}
		if p.Concurrency <= fitMax {
			fit = append(fit, sp)
		} else {
			held = append(held, sp)
		}
	}
	if len(fit) < 2 {
		return replica.Calibration{}, fmt.Errorf("calibrate: %d sweep points at concurrency <= %d with data; want two or more (e.g. --concurrency 1,2,4,8,16,32,64)", len(fit), fitMax)
	}
	var pre []replica.PrefillPoint
	for _, n := range []int{cfg.PromptTokens, 3 * cfg.PromptTokens} {
		c := cfg
		c.Concurrency, c.Rate, c.Trace = 1, 0, nil
		c.PromptTokens, c.MaxTokens, c.Requests, c.Warmup, c.RampUp = n, 2, 8, 1, 0
		recs, dur, err := Run(ctx, c)
		if err != nil {
			return replica.Calibration{}, fmt.Errorf("calibrate: prefill run of %d-token prompts: %w", n, err)
		}
		s := Summarize(recs, dur)
		if s.Requests == 0 {
			return replica.Calibration{}, fmt.Errorf("calibrate: prefill run of %d-token prompts: no request succeeded (%s)", n, s.FirstError)
		}
		pre = append(pre, replica.PrefillPoint{PromptTokens: s.PromptTokens / s.Requests, TTFTS: float64(s.TTFTP50)})
	}
	if pre[0].PromptTokens == pre[1].PromptTokens {
		return replica.Calibration{}, errors.New("calibrate: the server counts both prompt lengths alike (usage prompt_tokens); cannot fit the prefill rate")
	}
	cal, err := replica.Fit(base, fit, pre, held)
	if err != nil {
		return cal, err
	}
	// The prefill points' predictions, for the table (no held-out TTFT:
	// both runs are fitted).
	return cal, cal.PredictPrefill(base, nil)
}
