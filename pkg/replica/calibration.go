package replica

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"
	"time"

	"github.com/infscale/infscale/internal/boundedfile"
	"github.com/infscale/infscale/internal/jsonpos"
)

// CalibrationKind marks a calibration file.
const CalibrationKind = "infscale-calibration"

// Calibration is the replica model's free parameters fitted to
// measurements of one server (`infscale load --calibrate`): the decode
// step's fixed part and its growth with the batch, the prefill rate and
// the per-request overhead. Apply sets them on a Config of the same GPU,
// model and TP. JSON is the calibration file's format.
type Calibration struct {
	Kind    string `json:"kind"`
	Version int    `json:"version"`
	// GPU, Model and TP name the configuration the fit is relative to.
	GPU   string `json:"gpu"`
	Model string `json:"model"`
	TP    int    `json:"tp"`
	// Source says where the measurements came from (free text).
	Source string `json:"source,omitempty"`

	// BandwidthEfficiency, MFU, StepOverheadS, SequenceStepCostS and
	// RequestOverheadS are the fitted Config fields (times in seconds).
	BandwidthEfficiency float64 `json:"bandwidth_efficiency"`
	// KVBandwidthEfficiency is Config.KVBandwidthEfficiency: the KV cache's
	// read efficiency when it differs from the weights' (0 or absent: the
	// same). Fit fits it when the decode points' contexts per sequence
	// differ by MinContextSpread or more, and keeps the base's otherwise: a
	// sweep at one prompt length cannot tell a slower KV read from
	// SequenceStepCost.
	KVBandwidthEfficiency float64 `json:"kv_bandwidth_efficiency,omitempty"`
	// KVNote says whether Fit fitted the KV read efficiency, from which
	// contexts per sequence, or why it kept the base's (free text).
	KVNote        string  `json:"kv_note,omitempty"`
	MFU           float64 `json:"mfu"`
	StepOverheadS float64 `json:"step_overhead_s"`
	// LayerStepCostS is Config.LayerStepCost: the step's fixed part per
	// layer, fitted in place of StepOverheadS when the base has one
	// (the fitted mode's physical step model); 0 or absent otherwise.
	LayerStepCostS    float64 `json:"layer_step_cost_s,omitempty"`
	SequenceStepCostS float64 `json:"sequence_step_cost_s"`
	RequestOverheadS  float64 `json:"request_overhead_s"`

	// Fit and HeldOut are the decode points the fit used and those it
	// predicts without having seen them, each with the fitted model's
	// prediction.
	Fit     []StepPoint `json:"fit"`
	HeldOut []StepPoint `json:"held_out,omitempty"`
	// Prefill are the concurrency-1 TTFTs the prefill rate and the
	// per-request overhead come from; PrefillHeldOut those predicted
	// without having been fitted (PredictPrefill fills both predictions).
	Prefill        []PrefillPoint `json:"prefill"`
	PrefillHeldOut []PrefillPoint `json:"prefill_held_out,omitempty"`
	// path is the file LoadCalibration read it from, for Apply's errors.
	path string
	// Warnings are Fit's, not in the file: the measured steps or prefills
	// were faster than the GPU's peak bandwidth or FLOPs allow the model
	// on it, so an efficiency was capped at 1 and the fitted model is
	// slower than the measurements (the GPU, model or TP is not the
	// server's).
	Warnings []string `json:"-"`
}

// StepPoint is one measured decode step: Batch sequences holding
// ContextTokens tokens of KV in total took StepS seconds (a load point's
// ITL p50 at concurrency Batch); PredictedS is the calibrated model's.
type StepPoint struct {
	Batch         int     `json:"batch"`
	ContextTokens int64   `json:"context_tokens"`
	StepS         float64 `json:"step_s"`
	PredictedS    float64 `json:"predicted_s,omitempty"`
}

// PrefillPoint is a TTFT measured with nothing else running (nothing
// queued, for a fit from history); PredictedS is the calibrated model's
// (request overhead + prefill), when predicted.
type PrefillPoint struct {
	PromptTokens int     `json:"prompt_tokens"`
	TTFTS        float64 `json:"ttft_s"`
	PredictedS   float64 `json:"predicted_s,omitempty"`
}

// Error is the relative error of the prediction, (predicted - measured) /
// measured.
func (p PrefillPoint) Error() float64 { return (p.PredictedS - p.TTFTS) / p.TTFTS }

// PredictPrefill sets each prefill point's prediction by the calibration
// applied to base (its RequestOverhead + PrefillTime), and PrefillHeldOut
// to heldOut with theirs. Errors: Apply's, New's.
func (c *Calibration) PredictPrefill(base Config, heldOut []PrefillPoint) error {
	cfg, err := c.Apply(base)
	if err != nil {
		return err
	}
	r, err := New(cfg)
	if err != nil {
		return err
	}
	predict := func(ps []PrefillPoint) []PrefillPoint {
		out := make([]PrefillPoint, len(ps))
		for i, p := range ps {
			p.PredictedS = r.RequestOverhead() + r.PrefillTime(p.PromptTokens)
			out[i] = p
		}
		return out
	}
	c.Prefill, c.PrefillHeldOut = predict(c.Prefill), predict(heldOut)
	return nil
}

// Error is the relative error of the prediction, (predicted - measured) /
// measured.
func (p StepPoint) Error() float64 { return (p.PredictedS - p.StepS) / p.StepS }

// Fit fits base's free parameters to decode points (at least two distinct
// batches) and prefill points, and predicts heldOut with the result. With
// two or more prompt lengths the prefill line gives the rate and the
// request overhead; with one TTFT, the overhead alone (the base's rate
// kept); with none, both stay the base's.
//
// The step is modelled as pkg/replica's StepTime: weights and context KV
// read at the bandwidth efficiency (the KV at base's KVBandwidthEfficiency
// when set, which is kept), plus StepOverhead (or layers × LayerStepCost
// when base has a per-layer cost: the fit is then of that), plus batch ×
// SequenceStepCost. A least-squares line step = a + s·batch through the
// points gives a and s; a is the weights' read time plus the overhead (the
// efficiency is raised when a is below the weights' read time at base's
// efficiency, so that the overhead is not negative); s is each sequence's
// KV read (its context per sequence at that efficiency) plus
// SequenceStepCost (plus the per-sequence parts kept: the cost per
// sequence per layer, the all-reduces' bytes). When the contexts per
// sequence differ between points by MinContextSpread or more (a sweep at
// two prompt lengths), a least-squares plane step = a + s·batch +
// k·context gives the KV read per token k apart, and with it the KV read
// efficiency (at most 1); s is then SequenceStepCost alone. KVNote says
// which it was and, when the KV efficiency was not fitted, why (contexts
// too alike, contexts that move with the batch alone, or a KV slope that
// is not positive). The prefill line TTFT = RequestOverhead + prompt /
// rate through the prefill points gives the rate (as MFU) and the
// overhead. Negative fitted costs are clamped to 0.
func Fit(base Config, steps []StepPoint, prefill []PrefillPoint, heldOut []StepPoint) (Calibration, error) {
	r, err := New(base)
	if err != nil {
		return Calibration{}, err
	}
	xs, ys := make([]float64, len(steps)), make([]float64, len(steps))
	var perSeqCtx float64
	for i, p := range steps {
		if p.Batch < 1 || !(p.StepS > 0) || p.ContextTokens < 0 {
			return Calibration{}, fmt.Errorf("calibration: step point %d: batch %d, step %g s: want batch >= 1 and a step > 0", i, p.Batch, p.StepS)
		}
		xs[i], ys[i] = float64(p.Batch), p.StepS
		perSeqCtx += float64(p.ContextTokens) / float64(p.Batch)
	}
	a, s, ok := line(xs, ys)
	if !ok {
		return Calibration{}, errors.New("calibration: the decode fit needs points at two or more batch sizes")
	}
	perSeqCtx /= float64(len(steps))
	// Contexts per sequence that differ between points (two prompt
	// lengths, windows of different prompts) tell the KV read from the
	// per-sequence cost: step = a + s·batch + k·context.
	cs := make([]float64, len(steps))
	for i, p := range steps {
		cs[i] = float64(p.ContextTokens)
	}
	pa, ps, pk, se, independent := plane(xs, cs, ys)
	lo, hi := contextRange(steps)
	spread := 0.0
	if lo > 0 {
		spread = hi / lo
	}
	kvFit := independent && spread >= MinContextSpread && pk > kvSignificance*se
	if kvFit {
		a, s = pa, ps
	}
	px, py := make([]float64, len(prefill)), make([]float64, len(prefill))
	for i, p := range prefill {
		if p.PromptTokens < 1 || !(p.TTFTS > 0) {
			return Calibration{}, fmt.Errorf("calibration: prefill point %d: %d tokens, TTFT %g s: want >= 1 and > 0", i, p.PromptTokens, p.TTFTS)
		}
		px[i], py[i] = float64(p.PromptTokens), p.TTFTS
	}
	// With no prefill point the base's rate and overhead stay; with one,
	// the rate stays and the overhead takes the rest of the TTFT.
	reqOver, perToken := base.RequestOverhead.Seconds(), r.prefillSecondsPerToken
	switch len(prefill) {
	case 0:
	case 1:
		reqOver = py[0] - px[0]*perToken
	default:
		var ok bool
		reqOver, perToken, ok = line(px, py)
		if !ok || !(perToken > 0) {
			return Calibration{}, errors.New("calibration: the prefill fit needs TTFTs at two or more prompt lengths, longer prompts slower")
		}
	}

	c := base
	weights := r.weightSeconds + r.expertSeconds*expertMean(r)
	kvSeconds := r.kvSecondsPerToken                         // per token, at the KV's own efficiency when set
	fixed := r.overheadSeconds - base.StepOverhead.Seconds() // TP all-reduces, kept
	layers := float64(base.Model.Layers)
	perLayer := base.LayerStepCost > 0 // the fixed part of a step is a cost per layer
	if perLayer {
		fixed -= layers * base.LayerStepCost.Seconds()
	}
	eff := base.BandwidthEfficiency
	var warnings []string
	if need := a - fixed; need < weights {
		eff = eff * weights / math.Max(need, 1e-9)
		if eff > 1 {
			warnings = append(warnings, fmt.Sprintf("the decode steps' fixed part, %.3f ms, is less than reading %s's weights at %s's peak bandwidth on TP %d (%.3f ms): the bandwidth efficiency is capped at 1 and the fitted steps are slower than the measured ones; give the --gpu, --model and --tp the server runs",
				1000*need, base.Model.Name, base.GPU.Name, base.TP, 1000*weights*base.BandwidthEfficiency))
			eff = 1
		}
	}
	scale := base.BandwidthEfficiency / eff // read times at the new efficiency
	if base.KVBandwidthEfficiency == 0 {
		kvSeconds *= scale // the KV is read at the weights' efficiency
	}
	c.BandwidthEfficiency = eff
	c.StepOverhead = seconds(math.Max(0, a-fixed-weights*scale))
	if perLayer {
		c.StepOverhead, c.LayerStepCost = 0, seconds(math.Max(0, a-fixed-weights*scale)/layers)
	}
	// The per-sequence parts the fit keeps: the cost per sequence per
	// layer, the attention blocks' (KVHeadCost) and the all-reduces' bytes.
	keptPerSeq := r.perSeqSeconds - base.SequenceStepCost.Seconds()
	contexts := fmt.Sprintf("contexts of %.0f to %.0f tokens a sequence (%.2fx)", lo, hi, spread)
	var kvNote string
	if kvFit {
		// k is the KV read per token: at the efficiency e the model reads
		// it in kvBytesPerToken / (TP × bandwidth × e).
		kvEff := base.KVBandwidthEfficiency
		if kvEff == 0 {
			kvEff = base.BandwidthEfficiency
		}
		c.KVBandwidthEfficiency = math.Min(1, kvEff*r.kvSecondsPerToken/pk)
		if c.KVBandwidthEfficiency < MinEfficiency {
			warnings = append(warnings, fmt.Sprintf("the decode steps grow by %.4g ns a context token, a KV read at %.2g%% of %s's peak bandwidth, below the %g%% any served GPU reaches: the KV read efficiency is raised to %g and the fitted steps are faster than the measured ones; give the --gpu, --model and --tp the server runs",
				pk*1e9, 100*c.KVBandwidthEfficiency, base.GPU.Name, 100*MinEfficiency, MinEfficiency))
			c.KVBandwidthEfficiency = MinEfficiency
		}
		c.SequenceStepCost = seconds(math.Max(0, s-keptPerSeq))
		kvNote = fmt.Sprintf("KV read efficiency fitted from the decode points' %s", contexts)
	} else {
		kept := "KV read efficiency not fitted, the KV read at the weights' efficiency as in the base"
		if base.KVBandwidthEfficiency > 0 {
			kept = fmt.Sprintf("KV read efficiency kept at the base's %.3f", base.KVBandwidthEfficiency)
		}
		switch {
		case spread < MinContextSpread:
			kvNote = fmt.Sprintf("%s: the decode points' %s differ less than the %.1fx that tells the KV read from the per-sequence cost (measure at prompt lengths further apart)", kept, contexts, MinContextSpread)
		case !independent:
			kvNote = fmt.Sprintf("%s: the decode points' %s vary with the batch alone (give each context at two or more batch sizes)", kept, contexts)
		default:
			kvNote = fmt.Sprintf("%s: over the decode points' %s the step's growth with the context, %.4g ± %.4g ns a token, is not %d standard errors above 0 (noise outweighs the KV read)", kept, contexts, pk*1e9, se*1e9, kvSignificance)
		}
		c.SequenceStepCost = seconds(math.Max(0, s-perSeqCtx*kvSeconds-keptPerSeq))
	}
	c.MFU = base.MFU * r.prefillSecondsPerToken / perToken
	if c.MFU > 1 {
		warnings = append(warnings, fmt.Sprintf("the prefill, %.0f tokens a second, is faster than %s's peak FLOPs allow %s on TP %d (%.0f): the MFU is capped at 1 and the fitted TTFTs are slower than the measured ones; give the --gpu, --model and --tp the server runs",
			1/perToken, base.GPU.Name, base.Model.Name, base.TP, 1/(base.MFU*r.prefillSecondsPerToken)))
		c.MFU = 1
	}
	if c.MFU < MinEfficiency {
		warnings = append(warnings, fmt.Sprintf("the prefill, %.0f tokens a second, is below %g%% of what %s's peak FLOPs allow %s on TP %d (%.0f): the MFU is raised to %g and the fitted TTFTs are faster than the measured ones; give the --gpu, --model and --tp the server runs",
			1/perToken, 100*MinEfficiency, base.GPU.Name, base.Model.Name, base.TP, 1/(base.MFU*r.prefillSecondsPerToken), MinEfficiency))
		c.MFU = MinEfficiency
	}
	c.RequestOverhead = seconds(math.Max(0, reqOver))
	fitted, err := New(c)
	if err != nil {
		return Calibration{}, fmt.Errorf("calibration: the fitted model is invalid: %w", err)
	}
	cal := Calibration{Kind: CalibrationKind, Version: 1, GPU: base.GPU.Name, Model: base.Model.Name, TP: base.TP,
		BandwidthEfficiency: c.BandwidthEfficiency, KVBandwidthEfficiency: c.KVBandwidthEfficiency, KVNote: kvNote, MFU: c.MFU, StepOverheadS: c.StepOverhead.Seconds(), LayerStepCostS: c.LayerStepCost.Seconds(),
		SequenceStepCostS: c.SequenceStepCost.Seconds(), RequestOverheadS: c.RequestOverhead.Seconds(), Prefill: prefill, Warnings: warnings}
	predict := func(ps []StepPoint) []StepPoint {
		out := make([]StepPoint, len(ps))
		for i, p := range ps {
			p.PredictedS = fitted.StepTime(p.Batch, p.ContextTokens)
			out[i] = p
		}
		return out
	}
	cal.Fit, cal.HeldOut = predict(steps), predict(heldOut)
	return cal, nil
}

// expertMean is the expected fraction of expert weights a step reads, at
// half the batch limit (0 for dense models).
func expertMean(r *Replica) float64 {
	if r.expertTouched == nil {
		return 0
	}
	return r.expertTouched[len(r.expertTouched)/2]
}

func seconds(s float64) time.Duration { return time.Duration(math.Round(s * float64(time.Second))) }

// MinContextSpread is how much the context per sequence (context tokens
// / batch) must differ between Fit's decode points, largest over
// smallest, for Fit to fit the KV read efficiency: at one prompt length
// the KV read grows with the batch as the per-sequence cost does, and the
// two cannot be told apart.
const MinContextSpread = 1.5

// contextRange is the smallest and the largest context per sequence
// (context tokens / batch) of steps.
func contextRange(steps []StepPoint) (lo, hi float64) {
	lo = math.Inf(1)
	for _, p := range steps {
		c := float64(p.ContextTokens) / float64(p.Batch)
		lo, hi = math.Min(lo, c), math.Max(hi, c)
	}
	return lo, hi
}

// kvSignificance is how many standard errors above 0 the plane's KV
// slope must be for Fit to take it: a slope within noise of 0 would put
// the KV read efficiency anywhere up to 1.
const kvSignificance = 3

// plane is the least-squares fit y = a + b·x + c·z with se the standard
// error of c (0 with three points: the plane is exact); ok is false when
// x and z do not vary independently (fewer than three points, or one a
// linear function of the other within 0.5% of the variance).
func plane(xs, zs, ys []float64) (a, b, c, se float64, ok bool) {
	n := float64(len(xs))
	if len(xs) < 3 {
		return 0, 0, 0, 0, false
	}
	var mx, mz, my float64
	for i := range xs {
		mx, mz, my = mx+xs[i]/n, mz+zs[i]/n, my+ys[i]/n
	}
	var sxx, szz, sxz, sxy, szy float64
	for i := range xs {
		x, z, y := xs[i]-mx, zs[i]-mz, ys[i]-my
		sxx, szz, sxz, sxy, szy = sxx+x*x, szz+z*z, sxz+x*z, sxy+x*y, szy+z*y
	}
	d := sxx*szz - sxz*sxz
	if !(sxx > 0 && szz > 0) || d <= 0.005*sxx*szz {
		return 0, 0, 0, 0, false
	}
	b = (sxy*szz - szy*sxz) / d
	c = (szy*sxx - sxy*sxz) / d
	a = my - b*mx - c*mz
	if len(xs) > 3 {
		var rss float64
		for i := range xs {
			r := ys[i] - a - b*xs[i] - c*zs[i]
			rss += r * r
		}
		se = math.Sqrt(rss / (n - 3) * sxx / d)
	}
	return a, b, c, se, true
}

// line is the least-squares fit y = a + b·x; ok is false with fewer than
// two distinct x.
func line(xs, ys []float64) (a, b float64, ok bool) {
	n := float64(len(xs))
	if len(xs) < 2 {
		return 0, 0, false
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	d := n*sxx - sx*sx
	if d <= 1e-12*n*sxx {
		return 0, 0, false
	}
	b = (n*sxy - sx*sy) / d
	return (sy - b*sx) / n, b, true
}

// MismatchError is Apply's error for a replica other than the one a
// calibration was fitted on: the calibration's GPU, model and TP against
// the replica's. Its text gives the command line's flags for the fitted
// replica; a front end with other syntax (a config file) words its own.
type MismatchError struct {
	Fitted, Replica struct {
		GPU, Model string
		TP         int
	}
}

func (e *MismatchError) Error() string {
	f, r := e.Fitted, e.Replica
	var model string
	if m, err := LookupModel(f.Model); err == nil {
		model = "--model " + m.Name
	} else {
		// A model outside the catalog, fitted with --model-config: the
		// --model the message gave was refused as unknown.
		model = fmt.Sprintf("--model-config with the config.json of %s (not in the catalog: infscale gpu --list)", f.Model)
	}
	return fmt.Sprintf("calibration fitted for %s on %d x %s, not %s on %d x %s (pass %s --gpu %s --tp %d)",
		f.Model, f.TP, f.GPU, r.Model, r.TP, r.GPU, model, f.GPU, f.TP)
}

// Matches reports whether cfg is the GPU, model and TP the calibration was
// fitted on. Names match as the catalogs look them up (any case, an alias,
// a model's Hugging Face repository or catalog key), so a file fitted with
// --model-config of a catalog model applies to --model of it and the
// reverse; a model outside the catalog matches its own name.
func (c Calibration) Matches(cfg Config) bool {
	return c.TP == cfg.TP && sameGPU(c.GPU, cfg.GPU.Name) && sameModel(c.Model, cfg.Model)
}

func sameGPU(a, b string) bool {
	if strings.EqualFold(a, b) {
		return true
	}
	ga, errA := LookupGPU(a)
	gb, errB := LookupGPU(b)
	return errA == nil && errB == nil && ga.Name == gb.Name
}

func sameModel(name string, m Model) bool {
	if strings.EqualFold(name, m.Name) || (m.HFRepo != "" && strings.EqualFold(name, m.HFRepo)) {
		return true
	}
	a, errA := LookupModel(name)
	b, errB := LookupModel(m.Name)
	return errA == nil && errB == nil && a.Name == b.Name
}

// Digest is the calibration's fitted figures as a hex SHA-256 (of their
// JSON): what Apply makes of a replica, without the measurements the fit
// came from, its notes or its file's path. Two files with the same
// figures have the same digest; a refit that changed a figure another.
// A tune result records it, so a result tuned on one fit is not taken
// for a replica on another fit that sits at the same path.
func (c Calibration) Digest() string {
	c.Source, c.KVNote, c.path, c.Warnings = "", "", "", nil
	c.Fit, c.HeldOut, c.Prefill, c.PrefillHeldOut = nil, nil, nil, nil
	return digestJSON(c)
}

// digestJSON is v's JSON as a hex SHA-256 (v has no map, so its JSON is
// one byte string for one value).
func digestJSON(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("replica: digest of %T: %v", v, err)) // plain structs of numbers and strings
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Apply returns cfg with the calibration's fitted fields. Errors with a
// *MismatchError when cfg is not the GPU, model and TP the calibration was
// fitted on (Matches).
func (c Calibration) Apply(cfg Config) (Config, error) {
	if !c.Matches(cfg) {
		e := &MismatchError{}
		e.Fitted.GPU, e.Fitted.Model, e.Fitted.TP = c.GPU, c.Model, c.TP
		e.Replica.GPU, e.Replica.Model, e.Replica.TP = cfg.GPU.Name, cfg.Model.Name, cfg.TP
		return cfg, e
	}
	cfg.BandwidthEfficiency, cfg.KVBandwidthEfficiency, cfg.MFU = c.BandwidthEfficiency, c.KVBandwidthEfficiency, c.MFU
	cfg.StepOverhead, cfg.SequenceStepCost, cfg.RequestOverhead = seconds(c.StepOverheadS), seconds(c.SequenceStepCostS), seconds(c.RequestOverheadS)
	// The file's fixed step is its step overhead plus its per-layer cost
	// (0 when absent): the base's own per-layer cost does not add to it.
	cfg.LayerStepCost = seconds(c.LayerStepCostS)
	return cfg, c.reproduces(cfg)
}

// MaxPredictionDrift is how far (relative) the replica a calibration is
// applied to may predict one of the file's points from the prediction
// the fit recorded for it (predicted_s). Applied to the base it was fitted
// from, unedited, it reproduces them to rounding; beyond this, its values
// were edited (a time in milliseconds where the file has seconds) or the
// base is another (a fit from the reference base replayed with --fitted,
// whose step model has terms the fit did not see).
const MaxPredictionDrift = 0.05

// reproduces is an error naming the point whose recorded prediction cfg
// misses by the most, when that is more than MaxPredictionDrift; nil
// when every point is within it, when no point has a prediction (a file
// written by hand), or when cfg is not a valid replica (New says why).
func (c Calibration) reproduces(cfg Config) error {
	// Not bounded by MaxDecodeStep: a drift names the unit error (1 for
	// 0.001 s) that the bound would only say is too slow.
	r, err := build(cfg, false)
	if err != nil {
		return nil
	}
	worst, key := 0.0, ""
	var recorded, now float64
	check := func(k string, was, is float64) {
		if was > 0 {
			if d := math.Abs(is-was) / was; d > worst {
				worst, key, recorded, now = d, k, was, is
			}
		}
	}
	for _, set := range []struct {
		key string
		ps  []StepPoint
	}{{"fit", c.Fit}, {"held_out", c.HeldOut}} {
		for i, p := range set.ps {
			check(fmt.Sprintf("%s[%d]", set.key, i), p.PredictedS, r.StepTime(p.Batch, p.ContextTokens))
		}
	}
	for _, set := range []struct {
		key string
		ps  []PrefillPoint
	}{{"prefill", c.Prefill}, {"prefill_held_out", c.PrefillHeldOut}} {
		for i, p := range set.ps {
			check(fmt.Sprintf("%s[%d]", set.key, i), p.PredictedS, r.RequestOverhead()+r.PrefillTime(p.PromptTokens))
		}
	}
	if worst <= MaxPredictionDrift {
		return nil
	}
	file := "the calibration"
	if c.path != "" {
		file = c.path
	}
	return fmt.Errorf("%s: applied to this replica it predicts %s at %.4g ms, where the fit predicted %.4g ms (%+.0f%%, more than the %.0f%% a replica of the fit's base reproduces): its values were edited (times are seconds: step_overhead_s 0.002 is 2 ms) or it was fitted on another replica (give the replica flags of its source: --calibrated or --fitted, --dtype, --accounting, --allreduce-latency, ...; accuracy's --replica calibrated, fitted or reference; a serve config's replica takes the reference base: fit without them for it); refit, or delete the points' predicted_s to apply edited values as they are",
		file, key, 1000*now, 1000*recorded, 100*(now-recorded)/recorded, 100*MaxPredictionDrift)
}

// maxCalibrationBytes bounds a calibration file.
const maxCalibrationBytes = 1 << 20

// LoadCalibration reads and validates a calibration file (JSON as Fit
// returns it). Every error names the file and the line:column of the key or
// value at fault ("FILE:3:27: mfu 2: want a fraction from 0.01 to 1 ..."): malformed
// JSON, a truncated file, data after the object, a key given twice in one
// object, a key the format does not have (exact names, with the allowed ones), a value of the wrong type (as
// written, with what the key takes), every value validate refuses (a key
// left out as missing, at the object without it), a GPU
// outside the catalog and an empty model, all of them at once (at most
// maxCalibrationErrors; syntax errors and a file that is no calibration
// are one error). The GPU is returned under its
// catalog name; the model as written (Matches compares it).
func LoadCalibration(path string) (Calibration, error) {
	data, err := boundedfile.Read(path, maxCalibrationBytes, "a calibration file", "want the JSON file infscale load --calibrate writes")
	if err != nil {
		return Calibration{}, err
	}
	ix, err := jsonpos.New(data)
	at := func(off int64, format string, args ...any) error {
		line, col := jsonpos.LineCol(data, off)
		return fmt.Errorf("%s:%d:%d: %s", path, line, col, fmt.Sprintf(format, args...))
	}
	if err != nil {
		var se *json.SyntaxError
		var te *jsonpos.TrailingError
		switch {
		case errors.As(err, &se):
			return Calibration{}, at(se.Offset, "%v (want the JSON object infscale load --calibrate writes)", se)
		case errors.As(err, &te):
			return Calibration{}, at(te.Offset, "%v", te)
		case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
			return Calibration{}, at(int64(len(data)), "unexpected end of the JSON (truncated or empty file?)")
		}
		return Calibration{}, fmt.Errorf("%s: %w", path, err)
	}
	// An object without "kind" is another file (gpu --output json, a
	// tune result, a hand-written file): one error saying so, not one per
	// key it has that a calibration does not.
	if root := ix.Lookup(""); data[root.Value] == '{' && ix.Lookup("kind") == root {
		var keys []string
		for _, u := range ix.UnknownKeys(reflect.TypeFor[Calibration]()) {
			if u.Path == u.Key { // top level
				keys = append(keys, u.Key)
			}
		}
		what := "the rest of it is a calibration's"
		if strings.Join(strings.Fields(string(data)), "") == "{}" {
			what = "an empty object"
		}
		if len(keys) > 0 {
			if len(keys) > 6 {
				keys = append(keys[:6], "...")
			}
			what = "its keys " + strings.Join(keys, ", ") + " are not a calibration's"
		}
		return Calibration{}, at(root.Value, "not a calibration file: no \"kind\": %q (%s); want the JSON file infscale load --calibrate or backtest --calibrate writes, or add \"kind\": %q, \"version\": 1 to one written by hand", CalibrationKind, what, CalibrationKind)
	}
	// Every problem is collected, in this order (the kinds a reader fixes
	// first first), and reported at once, at most maxCalibrationErrors.
	var errs []error
	for _, d := range ix.Duplicates() {
		line, col := ix.LineCol(d.First.Key)
		errs = append(errs, at(d.Second.Key, "%s: key given twice (first at %d:%d); give it once", d.Path, line, col))
	}
	misspelt := map[string]bool{} // parent path and lower-cased key of each unknown key
	for _, u := range ix.UnknownKeys(reflect.TypeFor[Calibration]()) {
		parent := strings.TrimSuffix(u.Path, u.Key)
		where := ""
		if parent != "" {
			where = " in " + strings.TrimSuffix(parent, ".")
		}
		misspelt[parent+strings.ToLower(u.Key)] = true
		errs = append(errs, at(ix.Lookup(u.Path).Key, "unknown key %q%s (allowed: %s)", u.Key, where, strings.Join(u.Allowed, ", ")))
	}
	// Each value is decoded on its own, so that every one of the wrong
	// type is said (a decoder stops at the first), and a key that failed
	// is not said again by validate (it reads the zero left in its place).
	var c Calibration
	failed := map[string]bool{}
	if rootErr := decodeEach(data[ix.Lookup("").Value:], reflect.ValueOf(&c).Elem(), "", func(path string, raw []byte, te *json.UnmarshalTypeError) {
		failed[path] = true
		off := ix.Lookup(path).Value
		if path == "" { // the document itself
			errs = append(errs, at(off, "the file is a JSON %s: want an object (a file infscale load --calibrate writes)", te.Value))
			return
		}
		text := strings.TrimSpace(string(raw))
		if len(text) > 40 {
			text = text[:40] + "..."
		}
		errs = append(errs, at(off, "%s: %s: want %s", path, text, jsonKind(te.Type)))
	}); rootErr != nil {
		return Calibration{}, fmt.Errorf("%s: %w", path, rootErr) // the index would have caught it
	}
	if failed[""] {
		return Calibration{}, errors.Join(errs...)
	}
	bad := func(key string) bool {
		_, ok := jsonpos.Nearest(key, func(p string) bool { return failed[p] })
		return ok
	}
	if !bad("kind") && !bad("version") && (c.Kind != CalibrationKind || c.Version != 1) {
		errs = append(errs, at(ix.Lookup("kind").Value, "kind %q version %d: want %q version 1 (a file infscale load --calibrate writes)", c.Kind, c.Version, CalibrationKind))
	}
	for _, e := range c.validate() {
		if bad(e.key) {
			continue
		}
		// A key left out reads as 0: say it is missing, not that the
		// file has a 0 (at the object that lacks it); not when it is
		// written in another case (an unknown key, said above).
		parent := e.key[:max(strings.LastIndexAny(e.key, ".["), 0)]
		if _, want, ok := strings.Cut(e.msg, ": want "); ok && ix.Lookup(e.key) == ix.Lookup(parent) {
			prefix := ""
			if parent != "" {
				prefix = parent + "."
			}
			if !misspelt[prefix+strings.ToLower(e.key[len(prefix):])] {
				errs = append(errs, at(ix.Lookup(e.key).Value, "%s: missing (want %s)", e.key, want))
			}
			continue
		}
		errs = append(errs, at(ix.Lookup(e.key).Value, "%v", e))
	}
	if !bad("gpu") {
		if g, err := LookupGPU(c.GPU); err != nil {
			errs = append(errs, at(ix.Lookup("gpu").Value, "gpu: %v", err))
		} else {
			c.GPU = g.Name // an alias ("H100") as the catalog names it
		}
	}
	// A model outside the catalog is one fitted with --model-config: Apply
	// matches it by name, and refuses a replica of another model.
	if !bad("model") && strings.TrimSpace(c.Model) == "" {
		errs = append(errs, at(ix.Lookup("model").Value, "model %q: want the model fitted: a catalog name (infscale gpu --list) or the Hugging Face repository of its config.json", c.Model))
	}
	if len(errs) > maxCalibrationErrors {
		errs = append(errs[:maxCalibrationErrors], fmt.Errorf("%s: %d more problem(s) not listed", path, len(errs)-maxCalibrationErrors))
	}
	if len(errs) > 0 {
		return Calibration{}, errors.Join(errs...)
	}
	c.path = path
	return c, nil
}

// maxCalibrationErrors bounds the problems LoadCalibration lists for one
// file; one more line says how many were left out.
const maxCalibrationErrors = 20

// decodeEach decodes raw into v one value at a time, struct fields by
// their exact json names (unknown keys are LoadCalibration's to say) and
// slices of structs element by element, calling typeErr for each value of
// the wrong type (its path as jsonpos names it: fit[1].batch) and leaving
// the zero there. Another error (none after jsonpos.New) is returned.
func decodeEach(raw []byte, v reflect.Value, path string, typeErr func(path string, raw []byte, te *json.UnmarshalTypeError)) error {
	try := func(err error) error {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			typeErr(path, raw, te)
			return nil
		}
		return err
	}
	switch {
	case v.Kind() == reflect.Struct:
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return try(err)
		}
		for i := range v.NumField() {
			f := v.Type().Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			sub, ok := m[name]
			if !f.IsExported() || name == "" || name == "-" || !ok {
				continue
			}
			key := name
			if path != "" {
				key = path + "." + name
			}
			if err := decodeEach(sub, v.Field(i), key, typeErr); err != nil {
				return err
			}
		}
		return nil
	case v.Kind() == reflect.Slice && v.Type().Elem().Kind() == reflect.Struct:
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil || items == nil {
			return try(err)
		}
		v.Set(reflect.MakeSlice(v.Type(), len(items), len(items)))
		for i, it := range items {
			if err := decodeEach(it, v.Index(i), fmt.Sprintf("%s[%d]", path, i), typeErr); err != nil {
				return err
			}
		}
		return nil
	}
	return try(json.Unmarshal(raw, v.Addr().Interface()))
}

// jsonKind names what a Go type takes in JSON, for a type error.
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return t.String()
}

// keyError is one refused value of a calibration: key is its JSON path
// (fit[2].step_s), msg what is wrong and what is allowed.
type keyError struct{ key, msg string }

func (e keyError) Error() string { return e.key + " " + e.msg }

// validate checks every value of a loaded calibration and returns one error
// per bad key, naming it (a point's key with its list and index, e.g.
// fit[2].step_s):
// efficiencies from MinEfficiency to 1, times >= 0 and below their bounds, TP 1 to 64
// (and one vLLM can shard the model at, for a catalog model),
// points with batch and prompt tokens >= 1 and times > 0. A negative or
// non-finite value is never a measurement.
func (c Calibration) validate() []keyError {
	var errs []keyError
	bad := func(key, format string, args ...any) {
		errs = append(errs, keyError{key: key, msg: fmt.Sprintf(format, args...)})
	}
	efficiency := func(key string, v float64) {
		if !EfficiencyOK(v) {
			bad(key, "%v: want %s", v, EfficiencyRange)
		}
	}
	below := func(key string, v float64, bound time.Duration) {
		if !(v >= 0 && v < bound.Seconds()) {
			bad(key, "%v: want seconds >= 0 and below %g", v, bound.Seconds())
		}
	}
	positive := func(key string, v float64) {
		if !(v > 0) || math.IsInf(v, 0) {
			bad(key, "%v: want seconds > 0", v)
		}
	}
	efficiency("bandwidth_efficiency", c.BandwidthEfficiency)
	if c.KVBandwidthEfficiency != 0 {
		efficiency("kv_bandwidth_efficiency", c.KVBandwidthEfficiency)
	}
	efficiency("mfu", c.MFU)
	below("step_overhead_s", c.StepOverheadS, stepOverheadBelow)
	below("layer_step_cost_s", c.LayerStepCostS, layerStepCostBelow)
	below("sequence_step_cost_s", c.SequenceStepCostS, sequenceStepCostBelow)
	below("request_overhead_s", c.RequestOverheadS, requestOverheadBelow)
	if c.TP < 1 || c.TP > 64 {
		bad("tp", "%d: want an integer from 1 to 64", c.TP)
	} else if m, err := LookupModel(c.Model); err == nil && m.Heads > 0 && m.KVHeads > 0 && !tpDivides(c.TP, m) {
		// No replica of the catalog model runs at this degree, so the
		// file could never apply (a model outside the catalog is checked
		// when its --model-config is read).
		bad("tp", "%d: want %s", c.TP, tpRequirement(m))
	}
	for _, set := range []struct {
		key string
		ps  []StepPoint
	}{{"fit", c.Fit}, {"held_out", c.HeldOut}} {
		for i, p := range set.ps {
			k := fmt.Sprintf("%s[%d].", set.key, i)
			if p.Batch < 1 {
				bad(k+"batch", "%d: want >= 1", p.Batch)
			}
			if p.ContextTokens < 0 {
				bad(k+"context_tokens", "%d: want >= 0", p.ContextTokens)
			}
			positive(k+"step_s", p.StepS)
			if p.PredictedS != 0 {
				positive(k+"predicted_s", p.PredictedS)
			}
		}
	}
	for _, set := range []struct {
		key string
		ps  []PrefillPoint
	}{{"prefill", c.Prefill}, {"prefill_held_out", c.PrefillHeldOut}} {
		for i, p := range set.ps {
			k := fmt.Sprintf("%s[%d].", set.key, i)
			if p.PromptTokens < 1 {
				bad(k+"prompt_tokens", "%d: want >= 1", p.PromptTokens)
			}
			positive(k+"ttft_s", p.TTFTS)
			if p.PredictedS != 0 {
				positive(k+"predicted_s", p.PredictedS)
			}
		}
	}
	return errs
}
