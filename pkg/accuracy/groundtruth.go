package accuracy

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Metric is one latency statistic of a stage.
type Metric string

// The metrics accuracy compares, in milliseconds. ITL is vLLM's and the
// data set's derived mean: (e2e mean - TTFT mean) / (output mean - 1).
const (
	TTFTMean Metric = "ttft_mean"
	TTFTP90  Metric = "ttft_p90"
	ITLMean  Metric = "itl_mean"
	E2EMean  Metric = "e2e_mean"
	E2EP90   Metric = "e2e_p90"
)

// Metrics lists the metrics in report order.
var Metrics = []Metric{TTFTMean, TTFTP90, ITLMean, E2EMean, E2EP90}

// measuredColumn is each metric's column in the ground-truth file.
var measuredColumn = map[Metric]string{
	TTFTMean: "actual_ttft_mean_ms", TTFTP90: "actual_ttft_p90_ms", ITLMean: "actual_itl_mean_ms",
	E2EMean: "actual_e2e_mean_ms", E2EP90: "actual_e2e_p90_ms",
}

// Stage is one row of a ground-truth file: a constant-rate stage of an
// experiment (StageIndex >= 0), or the whole run (StageIndex -1), with the
// server's settings, the workload and what was measured.
type Stage struct {
	// Experiment names the run; Line is the row's line in File.
	Experiment string
	File       string
	Line       int
	// Model is the Hugging Face name; Hardware the GPU ("H100"); TP the
	// tensor-parallel degree; DP the data-parallel replicas (1 when empty).
	Model     string
	Hardware  string
	TP, DP    int
	Precision string // "FP16", "BF16", "FP8" (the weights)
	// MaxNumBatchedTokens, MaxNumSeqs, MaxModelLen: vLLM's settings, 0
	// where the file leaves them empty (vLLM's defaults then);
	// GPUMemoryUtilization likewise (0: vLLM's 0.9).
	MaxNumBatchedTokens, MaxNumSeqs, MaxModelLen int
	GPUMemoryUtilization                         float64
	// StageIndex is the stage's position (from 0), -1 for the whole run.
	StageIndex int
	// Rate is the Poisson arrival rate in requests per second (0 on a
	// whole-run row without one) for Duration seconds.
	Rate, Duration float64
	// SystemPromptLen tokens of system prompt are shared by every request
	// of one of UniqueSystemPrompts prefixes (0 when none), followed by
	// QuestionLen tokens of the request's own; OutputLen tokens come out.
	SystemPromptLen, QuestionLen, OutputLen int
	UniqueSystemPrompts                     int
	// Measured holds the measured value of each metric present, in ms.
	Measured map[Metric]float64
	// Unmeasured lists the measured columns (actual_*_ms) the row leaves
	// empty or the file lacks: their metrics are not compared on this row.
	Unmeasured []string
}

// Key identifies a stage row: experiment and stage index.
type Key struct {
	Experiment string
	Stage      int
}

// Key returns the row's key.
func (s Stage) Key() Key { return Key{s.Experiment, s.StageIndex} }

// table reads a CSV file with a header and gives typed access to named
// columns, with errors naming file:line and the column.
type table struct {
	file string
	r    *csv.Reader
	cols map[string]int
	rec  []string
}

func openTable(name string, rd io.Reader, required ...string) (*table, error) {
	r := csv.NewReader(rd)
	r.ReuseRecord = false
	head, err := r.Read()
	if err == io.EOF {
		return nil, fmt.Errorf("%s: empty file: want a CSV header line", name)
	}
	if err != nil {
		return nil, csvError(name, err)
	}
	t := &table{file: name, r: r, cols: map[string]int{}}
	for i, h := range head {
		h = strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))
		if j, dup := t.cols[h]; dup && h != "" {
			return nil, fmt.Errorf("%s:1: column %s appears twice (fields %d and %d): which one holds the values is unknown; keep one", name, h, j+1, i+1)
		}
		t.cols[h] = i
	}
	var missing []string
	for _, c := range required {
		if _, ok := t.cols[c]; !ok {
			missing = append(missing, c)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s:1: header lacks column(s) %s", name, strings.Join(missing, ", "))
	}
	r.FieldsPerRecord = len(head)
	return t, nil
}

func csvError(name string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s:%d:%d: %v", name, pe.Line, pe.Column, pe.Err)
	}
	return fmt.Errorf("%s: %w", name, err)
}

// next reads a record; io.EOF at the end.
func (t *table) next() error {
	rec, err := t.r.Read()
	if err == io.EOF {
		return err
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) && errors.Is(pe.Err, csv.ErrFieldCount) {
		return fmt.Errorf("%s:%d: %d fields, the header has %d (a truncated file, or a comma in an unquoted field?)", t.file, pe.StartLine, len(rec), t.r.FieldsPerRecord)
	}
	if err != nil {
		return csvError(t.file, err)
	}
	t.rec = rec
	return nil
}

func (t *table) line() int {
	l, _ := t.r.FieldPos(0)
	return l
}

func (t *table) str(col string) string {
	i, ok := t.cols[col]
	if !ok {
		return ""
	}
	return strings.TrimSpace(t.rec[i])
}

// errorf names the file, line, column number and column name.
func (t *table) errorf(col, format string, args ...any) error {
	l, c := t.r.FieldPos(t.cols[col])
	return fmt.Errorf("%s:%d:%d: column %s: %s", t.file, l, c, col, fmt.Sprintf(format, args...))
}

// num reads a finite number; empty gives 0, ok false.
func (t *table) num(col string) (v float64, ok bool, err error) {
	s := t.str(col)
	if s == "" {
		return 0, false, nil
	}
	v, err = strconv.ParseFloat(s, 64)
	if err != nil || math.IsInf(v, 0) || math.IsNaN(v) {
		return 0, false, t.errorf(col, "%q is not a finite number", s)
	}
	return v, true, nil
}

// length reads a mean length in tokens, 1 to 2^24 as question_len; empty
// gives ok false. A value outside was skipped for the next column, and a
// prompt of 1e12 tokens replayed a 10 ms TTFT.
func (t *table) length(col string) (v float64, ok bool, err error) {
	v, ok, err = t.num(col)
	if err == nil && ok && !(v >= 1 && v <= 1<<24) {
		return 0, false, t.errorf(col, "%g: want a mean length in tokens from 1 to %d", v, 1<<24)
	}
	return v, ok, err
}

// count reads a whole number in [lo, hi] (a float spelling such as "5.0"
// accepted); empty gives 0.
func (t *table) count(col string, lo, hi int) (int, error) {
	v, ok, err := t.num(col)
	if err != nil || !ok {
		return 0, err
	}
	if v != math.Trunc(v) || v < float64(lo) || v > float64(hi) {
		return 0, t.errorf(col, "%q: want a whole number from %d to %d", t.str(col), lo, hi)
	}
	return int(v), nil
}

// ReadGroundTruth reads a ground-truth CSV (the schema of
// the public sim-to-real set's vllm-trainval.csv): one row per experiment
// and stage. Required columns: experiment, model, hardware, tp,
// stage_index, stage_rate_rps, stage_duration_s, and an output length
// (output_len_spec or output_len_meas_mean) and a prompt length
// (question_len, prompt_len_spec_mean or prompt_len_meas_mean). Errors
// name file:line:column and the column; a column named twice in the
// header and an experiment and stage given on two rows are errors too.
func ReadGroundTruth(name string) ([]Stage, error) {
	return readFile(name, ParseGroundTruth)
}

// ParseGroundTruth is ReadGroundTruth on an open reader; name is used in
// errors.
func ParseGroundTruth(name string, rd io.Reader) ([]Stage, error) {
	t, err := openTable(name, rd, "experiment", "model", "hardware", "tp", "stage_index", "stage_rate_rps", "stage_duration_s")
	if err != nil {
		return nil, err
	}
	var cols []string
	for _, m := range Metrics {
		if _, ok := t.cols[measuredColumn[m]]; ok {
			cols = append(cols, measuredColumn[m])
		}
	}
	if len(cols) == 0 {
		return nil, fmt.Errorf("%s:1: header lacks every measured column (%s): nothing to compare the predictions with; add at least one", name, strings.Join(measuredColumns(), ", "))
	}
	out, err := rows(t, func() (Stage, bool, error) {
		s, err := t.stage()
		return s, true, err
	})
	if err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no rows after the header", name)
	}
	// A stage counted twice would weigh twice in every MAPE, and a peer's
	// prediction of it would match both.
	seen := map[Key]int{}
	var dups []error
	for _, s := range out {
		if l, ok := seen[s.Key()]; ok {
			dups = append(dups, fmt.Errorf("%s:%d: experiment %q stage %d repeats line %d: one row per experiment and stage; remove one", name, s.Line, s.Experiment, s.StageIndex, l))
			continue
		}
		seen[s.Key()] = s.Line
	}
	if len(dups) > 0 {
		return nil, errors.Join(dups...)
	}
	return out, nil
}

// rows reads t's remaining rows through row, which gives the row's value,
// whether to keep it, or its error; at 20 errors it stops and returns them
// joined (a file wrong throughout is not one error a row).
func rows[T any](t *table, row func() (T, bool, error)) ([]T, error) {
	var out []T
	var errs []error
	for len(errs) < 20 {
		if err := t.next(); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		v, keep, err := row()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if keep {
			out = append(out, v)
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return out, nil
}

func (t *table) stage() (Stage, error) {
	s := Stage{File: t.file, Line: t.line(), Experiment: t.str("experiment"), Model: t.str("model"),
		Hardware: t.str("hardware"), Precision: t.str("precision"), Measured: map[Metric]float64{}}
	var errs []error
	try := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	for _, c := range []struct {
		col string
		v   string
	}{{"experiment", s.Experiment}, {"model", s.Model}, {"hardware", s.Hardware}} {
		if c.v == "" {
			try(t.errorf(c.col, "empty"))
		}
	}
	var err error
	s.TP, err = t.count("tp", 1, 64)
	try(err)
	if s.TP == 0 && err == nil {
		try(t.errorf("tp", "empty: want the tensor-parallel degree"))
	}
	s.DP, err = t.count("dp", 1, 10000)
	try(err)
	s.DP = max(s.DP, 1)
	s.MaxNumBatchedTokens, err = t.count("max_num_batched_tokens", 1, 1<<24)
	try(err)
	s.MaxNumSeqs, err = t.count("max_num_seqs", 1, 1<<20)
	try(err)
	s.MaxModelLen, err = t.count("max_model_len", 1, 1<<24)
	try(err)
	if u, ok, err := t.num("gpu_mem_util"); err != nil {
		try(err)
	} else if ok && !(u > 0 && u <= 1) {
		try(t.errorf("gpu_mem_util", "%g: want a fraction in (0, 1]", u))
	} else {
		s.GPUMemoryUtilization = u
	}
	s.StageIndex, err = t.count("stage_index", -1, 1<<20)
	try(err)
	if t.str("stage_index") == "" {
		try(t.errorf("stage_index", "empty: want the stage's index from 0, or -1 for the whole run"))
	}
	rate, ok, err := t.num("stage_rate_rps")
	try(err)
	if err == nil && ok && !(rate > 0 && rate <= 1e6) {
		try(t.errorf("stage_rate_rps", "%g: want requests per second in (0, 1e6]", rate))
	} else if err == nil && !ok && s.StageIndex >= 0 {
		try(t.errorf("stage_rate_rps", "empty: a stage needs its arrival rate"))
	}
	s.Rate = rate
	dur, ok, err := t.num("stage_duration_s")
	try(err)
	if err == nil && (!ok || !(dur > 0 && dur <= 1e7)) {
		try(t.errorf("stage_duration_s", "%q: want seconds in (0, 1e7]", t.str("stage_duration_s")))
	}
	s.Duration = dur
	s.SystemPromptLen, err = t.count("system_prompt_len", 0, 1<<24)
	try(err)
	s.UniqueSystemPrompts, err = t.count("num_unique_system_prompts", 0, 1<<24)
	try(err)
	s.QuestionLen, err = t.count("question_len", 0, 1<<24)
	try(err)
	// Every prompt column given is checked, read or not.
	prompt := 0
	for _, col := range []string{"prompt_len_spec_mean", "prompt_len_meas_mean"} {
		v, ok, err := t.length(col)
		try(err)
		if ok && prompt == 0 {
			prompt = int(math.Round(v))
		}
	}
	if s.QuestionLen == 0 && err == nil {
		// No shared-prefix description: the whole prompt is the request's.
		s.SystemPromptLen, s.UniqueSystemPrompts = 0, 0
		s.QuestionLen = prompt
		if s.QuestionLen == 0 {
			try(fmt.Errorf("%s:%d: no prompt length: want question_len, prompt_len_spec_mean or prompt_len_meas_mean", t.file, s.Line))
		}
	}
	for _, m := range Metrics {
		v, ok, err := t.num(measuredColumn[m])
		try(err)
		if !ok && err == nil {
			s.Unmeasured = append(s.Unmeasured, measuredColumn[m])
		}
		if ok {
			if !(v > 0 && v <= maxMeasuredMs) {
				try(t.errorf(measuredColumn[m], "%g: want milliseconds in (0, 1e10] (1e10 ms is 1e7 s, the longest stage)", v))
				continue
			}
			s.Measured[m] = v
		}
	}
	// The output length: measured; else the one the measured means imply
	// (the file's ITL is (e2e mean - TTFT mean) / (output mean - 1), so
	// the three give the output mean the server produced); else the spec.
	if v, ok, err := t.length("output_len_meas_mean"); err != nil {
		try(err)
	} else if ok {
		s.OutputLen = int(math.Round(v))
	}
	if s.OutputLen == 0 {
		e, ok1 := s.Measured[E2EMean]
		f, ok2 := s.Measured[TTFTMean]
		i, ok3 := s.Measured[ITLMean]
		if ok1 && ok2 && ok3 && e > f {
			if v := (e-f)/i + 1; v >= 1 && v <= 1<<24 {
				s.OutputLen = int(math.Round(v))
			}
		}
	}
	if v, ok, err := t.length("output_len_spec"); err != nil {
		try(err)
	} else if ok && s.OutputLen == 0 {
		s.OutputLen = int(math.Round(v))
	}
	if len(s.Measured) == 0 && len(s.Unmeasured) == len(Metrics) {
		try(fmt.Errorf("%s:%d: no measured value: columns %s are all empty or absent (a row needs at least one to compare)", t.file, s.Line, strings.Join(s.Unmeasured, ", ")))
	}
	if s.OutputLen == 0 {
		try(fmt.Errorf("%s:%d: no output length: want output_len_meas_mean, output_len_spec, or the three actual means (e2e, TTFT, ITL)", t.file, s.Line))
	}
	return s, errors.Join(errs...)
}

// measuredColumns lists the measured columns in Metrics order.
func measuredColumns() []string {
	out := make([]string, len(Metrics))
	for i, m := range Metrics {
		out[i] = measuredColumn[m]
	}
	return out
}

// Warnings lists what stages leave unmeasured, one line each: a column
// the file lacks ("FILE:1: no column C: metric M is not compared"), then
// each row that leaves a column of the file empty ("FILE:LINE: column C
// empty: metric M is not compared on this row").
func Warnings(stages []Stage) []string {
	if len(stages) == 0 {
		return nil
	}
	absent := map[string]bool{}
	for _, c := range stages[0].Unmeasured {
		absent[c] = true
	}
	for _, s := range stages[1:] {
		for c := range absent {
			if !slices.Contains(s.Unmeasured, c) {
				delete(absent, c)
			}
		}
	}
	metricOf := map[string]Metric{}
	for m, c := range measuredColumn {
		metricOf[c] = m
	}
	var out []string
	for _, c := range measuredColumns() {
		if absent[c] {
			out = append(out, fmt.Sprintf("%s:1: no column %s: metric %s is not compared", stages[0].File, c, metricOf[c]))
		}
	}
	for _, s := range stages {
		for _, c := range s.Unmeasured {
			if !absent[c] {
				out = append(out, fmt.Sprintf("%s:%d: column %s empty: metric %s is not compared on this row", s.File, s.Line, c, metricOf[c]))
			}
		}
	}
	return out
}

// maxMeasuredMs bounds a measured latency: 1e7 s, as long as the longest
// stage (stage_duration_s); a larger one (1e300 ms) is no measurement and
// made a stage's error 100%, its MAPE with it.
const maxMeasuredMs = 1e10
