package main

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/infscale/infscale/pkg/accuracy"
	"github.com/infscale/infscale/pkg/replica"
)

// AccuracyCmd replays measured load stages through the replica model and
// the replay and reports the error per stage and metric, beside peer
// simulators' predictions of the same rows.
type AccuracyCmd struct {
	GroundTruth string   `name:"ground-truth" required:"" type:"path" placeholder:"FILE" help:"Measured stages, CSV (the schema of the public sim-to-real set's vllm-trainval.csv: experiment, model, hardware, tp, stage rate and duration, prompt and output lengths, actual_*_ms)."`
	Peers       string   `name:"peers" type:"path" placeholder:"FILE" help:"Other simulators' predictions of the same rows, CSV (experiment, stage_index, metric_name, simulator, predicted_ms): their MAPE is printed beside infscale's on the same rows."`
	Output      string   `name:"output" short:"o" default:"text" enum:"text,json,table" help:"Output format: text (the table) or json; table is the same as text (its former name)."`
	ModelConfig []string `name:"model-config" type:"path" placeholder:"FILE" help:"A Hugging Face config.json for a model outside the catalog (repeatable); a row's model matches the config's _name_or_path or its directory name."`
	Replica     string   `name:"replica" default:"fitted" enum:"fitted,fitted-held-out,calibrated,reference" help:"The replica model the rows start from: fitted (the step model fitted on every row of the shared H100 set, docs/evaluation/ACCURACY.md), fitted-held-out (the same fitted without the held-out models' rows), calibrated (replica.Calibrated) or reference (docs/design.md's)."`
	HeldOut     []string `name:"held-out" placeholder:"MODEL" help:"Models (as the rows name them) held out: their rows are reported apart and --fit leaves them out (default: replica.FittedHeldOut's two with --replica fitted-held-out, none otherwise; --held-out= for none)."`
	Fit         bool     `name:"fit" help:"Fit the step model's terms on the rows of the models not held out (Nelder-Mead from the calibrated mode's terms, a few minutes), print them, and report with them."`
	Seed        uint64   `name:"seed" default:"1" help:"Seed of the Poisson arrivals."`
	Calibration string   `name:"calibration" type:"path" placeholder:"FILE" help:"A calibration file (infscale load --calibrate): applied to the experiments of its GPU, model and TP; the MAPE before it is printed beside the MAPE after."`
}

// Run reads the files, replays and prints the report.
func (c *AccuracyCmd) Run(e *env) error {
	files := [][2]string{{"ground-truth", c.GroundTruth}, {"peers", c.Peers}, {"calibration", c.Calibration}}
	for _, m := range c.ModelConfig {
		files = append(files, [2]string{"model-config", m})
	}
	for _, f := range files {
		if f[1] == "" {
			continue
		}
		if err := existingFile(f[0], f[1]); err != nil {
			return err
		}
	}
	stages, err := accuracy.ReadGroundTruth(c.GroundTruth)
	if err != nil {
		return invalid(fmt.Errorf("--ground-truth: %w", err))
	}
	for _, w := range accuracy.Warnings(stages) {
		fmt.Fprintln(e.stderr, "warning:", w)
	}
	var peers []accuracy.Prediction
	if c.Peers != "" {
		if peers, err = accuracy.ReadPeers(c.Peers); err != nil {
			return invalid(fmt.Errorf("--peers: %w", err))
		}
		if err := peersInRows(peers, stages, c.Peers, c.GroundTruth); err != nil {
			return err
		}
	}
	custom := map[string]replica.Model{}
	from := map[string]string{} // each model's --model-config file
	for _, f := range c.ModelConfig {
		m, err := loadModelConfig(f)
		if err != nil {
			return invalid(fmt.Errorf("--model-config: %w", err))
		}
		k := strings.ToLower(m.HFRepo)
		if g, ok := from[k]; ok && g != f {
			return invalidf("--model-config %s: model %s is %s's too: which shape its rows replay with is unknown; give one config per model", f, m.HFRepo, g)
		}
		from[k] = f
		custom[k] = m
		if i := strings.LastIndexByte(m.HFRepo, '/'); i >= 0 {
			custom[strings.ToLower(m.HFRepo[i+1:])] = m
		}
	}
	models := func(name string) (replica.Model, error) {
		k := strings.ToLower(name)
		if m, ok := custom[k]; ok {
			return m, nil
		}
		if i := strings.LastIndexByte(k, '/'); i >= 0 {
			if m, ok := custom[k[i+1:]]; ok {
				return m, nil
			}
		}
		return replica.LookupModel(name)
	}
	var base replica.Config
	heldOut := c.HeldOut
	switch c.Replica {
	case "calibrated":
		base = replica.Calibrated()
	case "reference":
		base = replica.DefaultConfig()
	case "fitted-held-out":
		base = replica.FittedH100HeldOut.Apply(replica.Calibrated())
		if heldOut == nil {
			heldOut = replica.FittedHeldOut()
		}
	default:
		base = replica.Fitted()
	}
	heldOut = slices.DeleteFunc(heldOut, func(s string) bool { return s == "" })
	// One model given twice (any case, as rows match) is held out, and
	// named in the footnote, once.
	var once []string
	for _, h := range heldOut {
		if !slices.ContainsFunc(once, func(o string) bool { return strings.EqualFold(o, h) }) {
			once = append(once, h)
		}
	}
	heldOut = once
	if err := heldOutInRows(c.HeldOut, stages, c.GroundTruth); err != nil {
		return err
	}
	opt := accuracy.Options{Base: &base, Models: models, Seed: c.Seed}
	if c.Fit {
		fit, err := accuracy.Fit(e.ctx, stages, opt, heldOut)
		if err != nil {
			return invalid(err)
		}
		fmt.Fprintln(e.stdout, fit.Terms())
		opt.Base = &fit.Config
	}
	var before map[accuracy.Metric]float64
	var applied atomic.Int64 // experiments the calibration applied to
	var cal replica.Calibration
	if c.Calibration != "" {
		var err error
		cal, err = replica.LoadCalibration(c.Calibration)
		if err != nil {
			return invalid(fmt.Errorf("--calibration: %w", err))
		}
		pred, err := accuracy.Predict(e.ctx, stages, opt)
		if err != nil {
			return invalid(err)
		}
		before = accuracy.Compare(stages, pred, nil, nil).MAPE
		opt.Adjust = func(cfg replica.Config) (replica.Config, error) {
			if !cal.Matches(cfg) {
				return cfg, nil // another deployment: the calibration does not apply
			}
			applied.Add(1)
			return cal.Apply(cfg)
		}
	}
	pred, err := accuracy.Predict(e.ctx, stages, opt)
	if err != nil {
		return invalid(err)
	}
	if c.Calibration != "" && applied.Load() == 0 {
		// As with --peers and --held-out: a file that matches nothing
		// printed the same MAPE twice and said nothing.
		return invalidf("--calibration %s: fitted for %s on %d x %s, and no experiment of %s is on that model, GPU and TP, so it changes nothing: give a calibration of a model, GPU and TP the rows have", c.Calibration, cal.Model, cal.TP, cal.GPU, c.GroundTruth)
	}
	rep := accuracy.Compare(stages, pred, peers, heldOut)
	if before != nil {
		rep.Before, rep.BeforeName = before, "without "+c.Calibration
	}
	if c.Output == "json" {
		return rep.WriteJSON(e.stdout)
	}
	return rep.WriteTable(e.stdout)
}

// peersInRows refuses a --peers file none of whose predictions is of a
// ground-truth row (experiment and stage): a file of other experiments,
// or names spelled otherwise, would print no peer and say nothing.
func peersInRows(peers []accuracy.Prediction, stages []accuracy.Stage, file, gtFile string) error {
	rows := map[accuracy.Key]bool{}
	for _, s := range stages {
		rows[s.Key()] = true
	}
	for _, p := range peers {
		if rows[p.Key] {
			return nil
		}
	}
	return invalidf("--peers %s: none of its %d predictions is of a row of %s (matched by experiment and stage_index): check that both files name the experiments alike", file, len(peers), gtFile)
}

// heldOutInRows refuses a --held-out name no row's model matches
// (case-insensitive, as Compare and Fit match): a typo would otherwise hold
// nothing out and report every row as fitted.
func heldOutInRows(given []string, stages []accuracy.Stage, file string) error {
	var models []string
	for _, s := range stages {
		if !slices.ContainsFunc(models, func(m string) bool { return strings.EqualFold(m, s.Model) }) {
			models = append(models, s.Model)
		}
	}
	for _, h := range given {
		if h != "" && !slices.ContainsFunc(models, func(m string) bool { return strings.EqualFold(m, h) }) {
			return invalidf("--held-out %s: no row of %s has that model (its models: %s)", h, file, strings.Join(models, ", "))
		}
	}
	return nil
}
