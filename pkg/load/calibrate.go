package load

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/infscale/infscale/pkg/replica"
)

// prefillProbes is how many requests of each prompt length the prefill
// fit measures (the TTFT p50 of each).
const prefillProbes = 16

// KVPromptTokens is the prompt length a calibration sweeps beside
// prompt so that the decode points' contexts per sequence (prompt +
// maxTokens / 2: a sequence is halfway through its output on average)
// differ 2x, more than the replica.MinContextSpread the KV read
// efficiency's fit needs: 2 × prompt + maxTokens / 2, which doubles the
// context, when it and maxTokens fit maxModelLen (0: no bound); otherwise
// prompt / 2 − maxTokens / 4, which halves it, when that is at least 1;
// otherwise the longest prompt that fits, maxModelLen − maxTokens, when
// it is longer than prompt; otherwise 0 (none: the fit keeps the base's
// KV efficiency and says so).
func KVPromptTokens(prompt, maxTokens, maxModelLen int) int {
	fits := func(n int) bool { return maxModelLen <= 0 || n+maxTokens <= maxModelLen }
	if up := 2*prompt + maxTokens/2; fits(up) {
		return up
	}
	if down := prompt/2 - maxTokens/4; down >= 1 {
		return down
	}
	if longest := maxModelLen - maxTokens; longest > prompt {
		return longest
	}
	return 0
}

// PromptSweep is a concurrency sweep's points at one prompt length.
type PromptSweep struct {
	// PromptTokens is the prompt length the requests asked for (the
	// points' own usage counts, when the server gives them, are used).
	PromptTokens int
	Points       []Summary
}

// Calibrate fits base's free parameters (replica.Fit) to a concurrency
// sweep's points and, when given, the same sweep's points at other prompt
// lengths (extra, run at concurrency up to fitMax only): each point of
// concurrency c up to fitMax (and up to the base's batch limit) is a
// decode step of batch c with c × (the point's prompt tokens per request
// + its output tokens per request / 2) tokens of context (the sequences
// are halfway through their output on average) taking the point's ITL
// p50; points at prompt
// lengths whose contexts differ by replica.MinContextSpread or more fit
// the KV read efficiency (the calibration's KVNote says whether). The
// points of points above fitMax are held out and predicted. The prefill
// line comes from TTFTs at concurrency 1 with no decoding to speak of
// (max_tokens 2): the p50 of prefillProbes requests each of
// cfg.PromptTokens and 3 × that, sent alternately (their predictions
// filled in).
func Calibrate(ctx context.Context, base replica.Config, cfg Config, points []Summary, extra []PromptSweep, fitMax int) (replica.Calibration, error) {
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
	sweeps := append([]PromptSweep{{PromptTokens: cfg.PromptTokens, Points: points}}, extra...)
	fit, held := decodePoints(sweeps, cfg.MaxTokens, r.MaxBatch(), fitMax)
	if len(fit) < 2 {
		return replica.Calibration{}, fmt.Errorf("calibrate: %d sweep points at concurrency <= %d with data; want two or more (e.g. --concurrency 1,2,4,8,16,32,64)", len(fit), fitMax)
	}
	// The two prompt lengths alternate, one request at a time, so that a
	// slow spell of the client machine or the server delays both alike and
	// the slope (the prefill rate) stays; each request has a fresh seed, a
	// prompt no prefix cache has seen.
	lengths := []int{cfg.PromptTokens, 3 * cfg.PromptTokens}
	recs := make([][]Record, len(lengths))
	for i := range prefillProbes + 1 { // the first pair warms up
		for j, n := range lengths {
			c := cfg
			c.Concurrency, c.Rate, c.Trace = 1, 0, nil
			c.PromptTokens, c.MaxTokens, c.Requests, c.Warmup, c.RampUp = n, 2, 1, 0, 0
			c.Seed = cfg.Seed + uint64(1+i*len(lengths)+j)
			rs, _, err := Run(ctx, c)
			if err != nil {
				return replica.Calibration{}, fmt.Errorf("calibrate: prefill run of %d-token prompts: %w", n, err)
			}
			if i > 0 {
				recs[j] = append(recs[j], rs...)
			}
		}
	}
	var pre []replica.PrefillPoint
	var warnings []string
	if w := failedPoints(sweeps, r.MaxBatch()); w != "" {
		warnings = append(warnings, w)
	}
	for j, n := range lengths {
		s := Summarize(recs[j], time.Second)
		if s.Requests == 0 {
			return replica.Calibration{}, fmt.Errorf("calibrate: prefill run of %d-token prompts: no request succeeded (%s)", n, s.FirstError)
		}
		if s.Errors > 0 {
			warnings = append(warnings, fmt.Sprintf("prefill probes of %d-token prompts: %d of %d failed; the first: %s (the TTFT p50 is of the others): check the server", n, s.Errors, s.Errors+s.Requests, s.FirstError))
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
	cal.Warnings = append(cal.Warnings, warnings...)
	// The prefill points' predictions, for the table (no held-out TTFT:
	// both runs are fitted).
	return cal, cal.PredictPrefill(base, nil)
}

// failedPoints says which of the sweeps' points that decodePoints takes
// had failed requests, "" when none did: such a point ran below its
// concurrency while a client's request failed, so its step is not quite
// that batch's.
func failedPoints(sweeps []PromptSweep, maxBatch int) string {
	var names []string
	first := ""
	for _, sw := range sweeps {
		for _, p := range sw.Points {
			if p.Errors == 0 || p.Concurrency < 1 || p.Concurrency > maxBatch || p.Requests == 0 || !(float64(p.ITLP50) > 0) {
				continue
			}
			names = append(names, fmt.Sprintf("c=%d at %d-token prompts (%d of %d failed)", p.Concurrency, sw.PromptTokens, p.Errors, p.Errors+p.Requests))
			first = cmp.Or(first, p.FirstError)
		}
	}
	if len(names) == 0 {
		return ""
	}
	return fmt.Sprintf("points with failed requests, fitted or held out: %s; the first: %s. Each ran below its concurrency while a request failed, its step not quite that batch's: check the server and rerun", strings.Join(names, ", "), first)
}

// decodePoints turns sweeps' points into decode steps: a point of
// concurrency c (1 to maxBatch, with a positive ITL p50) is a step of
// batch c taking its ITL p50, with c x (prompt + output / 2) tokens of
// context, prompt and output each a request's mean as the server's usage
// counts them (a sequence is halfway through its output on average); the
// sweep's prompt length and maxTokens when the point has no counts. Points
// up to fitMax are fitted, the others held out.
func decodePoints(sweeps []PromptSweep, maxTokens, maxBatch, fitMax int) (fit, held []replica.StepPoint) {
	for _, sw := range sweeps {
		for _, p := range sw.Points {
			if p.Concurrency < 1 || p.Concurrency > maxBatch || p.Requests == 0 || !(float64(p.ITLP50) > 0) {
				continue
			}
			prompt, output := float64(sw.PromptTokens), float64(maxTokens)
			if p.PromptTokens > 0 {
				prompt = float64(p.PromptTokens) / float64(p.Requests)
			}
			// The output generated, not max_tokens asked: a server that
			// ignores ignore_eos stops at the end of text.
			if p.OutputTokens > 0 {
				output = float64(p.OutputTokens) / float64(p.Requests)
			}
			perSeq := prompt + output/2
			sp := replica.StepPoint{Batch: p.Concurrency, ContextTokens: int64(math.Round(float64(p.Concurrency) * perSeq)), StepS: float64(p.ITLP50)}
			if p.Concurrency <= fitMax {
				fit = append(fit, sp)
			} else {
				held = append(held, sp)
			}
		}
	}
	return fit, held
}
