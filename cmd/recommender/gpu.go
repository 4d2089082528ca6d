package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/infscale/infscale/internal/quantity"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/replica"
)

// ReplicaFlags are the flags that describe one GPU replica. They embed in any
// subcommand that needs a replica (gpu, simulate) with `embed:""`; Config
// turns them into a validated replica.Config. Unset optional flags keep the
// base config's value: docs/design.md's reference (replica.DefaultConfig), or
// replica.Calibrated with --calibrated.
type ReplicaFlags struct {
	GPU                 string         `name:"gpu" aliases:"replica-gpu" placeholder:"NAME" help:"GPU from the catalog (infscale gpu --list shows their figures): a10g, l4, l40s, a100-40gb, a100-80gb, h100-sxm, h100-pcie, h200, b200, mi300x (default h100-sxm)."`
	Model               string         `name:"model" aliases:"replica-model" placeholder:"NAME" help:"Model from the catalog (infscale gpu --list), or its Hugging Face repository (default llama-3-8b)."`
	ModelConfig         string         `name:"model-config" aliases:"replica-model-config" type:"path" placeholder:"FILE" help:"The model's Hugging Face config.json, for a model outside the catalog (dense or MoE, GQA, FP8/BF16, sliding windows); replaces --model."`
	TP                  *int           `name:"tp" aliases:"replica-tp" help:"Tensor-parallel degree: GPUs per replica; it divides the model's attention heads and MLP size, as vLLM requires (default 1)."`
	DType               *string        `name:"dtype" aliases:"replica-dtype" help:"Weight dtype: auto (the model's config.json torch_dtype), fp16, bf16, fp8, int8, int4 (default fp16; auto with --calibrated)."`
	KVDType             *string        `name:"kv-dtype" aliases:"replica-kv-dtype" help:"KV cache dtype: auto, fp16, bf16, fp8, int8 (default auto: the 16-bit activation dtype)."`
	MemoryUtilization   *float64       `name:"memory-utilization" aliases:"replica-memory-utilization" help:"vLLM --gpu-memory-utilization, in (0, 1] (default 0.9)."`
	Reserve             *string        `name:"reserve" aliases:"replica-reserve" help:"Memory per GPU kept from the KV cache besides weights, e.g. 4GB, 3.05GiB; a bare number is GB (default 4GB; 3.05GiB with --calibrated)."`
	MFU                 *float64       `name:"mfu" aliases:"replica-mfu" help:"Fraction of dense tensor FLOPS prefill reaches, 0.01 to 1 (default 0.4)."`
	BandwidthEfficiency *float64       `name:"bandwidth-efficiency" aliases:"replica-bandwidth-efficiency" help:"Fraction of peak memory bandwidth a decode step reaches, 0.01 to 1 (default 0.7; 0.77 with --calibrated)."`
	MaxNumSeqs          *int           `name:"max-num-seqs" aliases:"replica-max-num-seqs" help:"vLLM --max-num-seqs: most sequences in a batch (default 64; 256 with --calibrated)."`
	StepOverhead        *time.Duration `name:"step-overhead" aliases:"replica-step-overhead" help:"Fixed time added to every decode step (default 0s; 1.5ms with --calibrated)."`
	AllReduceLatency    *time.Duration `name:"allreduce-latency" aliases:"replica-allreduce-latency" help:"Time of one tensor-parallel all-reduce; each step pays 2 x layers of them when --tp > 1 (default 0s; 32us with --calibrated)."`
	ImagePull           *time.Duration `name:"image-pull" aliases:"replica-image-pull" help:"Image pull time of a cold start (default 45s)."`
	WeightLoadRate      *string        `name:"weight-load-rate" aliases:"replica-weight-load-rate" help:"Weight loading rate per second at a cold start, in bytes, e.g. 1GB, 500MB (1 Gb/s is 125MB); a bare number is GB (default 1GB)."`
	WarmUp              *time.Duration `name:"warm-up" aliases:"replica-warm-up" help:"Engine warm-up after the weights load (default 30s)."`
	CPURequest          *float64       `name:"cpu-request" aliases:"replica-cpu-request" help:"Pod CPU request in cores; CPU percent is relative to it (default 4)."`
	CPUIdle             *float64       `name:"cpu-idle" aliases:"replica-cpu-idle" help:"Pod CPU with nothing running, in cores (default 0.2)."`
	CPUEngine           *float64       `name:"cpu-engine" aliases:"replica-cpu-engine" help:"Busy engine loop CPU while anything runs, in cores (default 1)."`
	CPUPerSeq           *float64       `name:"cpu-per-seq" aliases:"replica-cpu-per-seq" help:"Extra CPU per running sequence, in cores (default 0.01)."`
	Accounting          *string        `name:"accounting" aliases:"replica-accounting" help:"Memory accounting: nominal (docs/design.md's GB arithmetic) or vllm (device GiB, exact parameters, blocks) (default nominal; vllm with --calibrated)."`
	BlockSize           *int           `name:"block-size" aliases:"replica-block-size" help:"KV block size in tokens under vllm accounting (default 16)."`
	Calibrated          bool           `name:"calibrated" aliases:"replica-calibrated" help:"Start from the vLLM-calibrated mode (docs/evaluation/ACCURACY.md) instead of docs/design.md's reference; other flags still override."`
	Fitted              bool           `name:"fitted" aliases:"replica-fitted" help:"Start from the step model fitted on the shared H100 sim-to-real set (infscale accuracy, docs/evaluation/ACCURACY.md): calibrated, plus the fitted weight read efficiency, KV-cache read efficiency, MFU (MoE experts too), a cost per layer and a cost per attention block (sequence × KV head × layer) each step, the all-reduce latency, the per-request overhead and the output lag, with the prefill floor and the interconnect's bytes; other flags still override."`
	SequenceStepCost    *time.Duration `name:"sequence-step-cost" aliases:"replica-sequence-step-cost" help:"Time added to a decode step per running sequence (default 0s)."`
	RequestOverhead     *time.Duration `name:"request-overhead" aliases:"replica-request-overhead" help:"Time each request spends before the scheduler sees it: the TTFT floor beyond the prefill (default 0s)."`
	Calibration         string         `name:"calibration" aliases:"replica-calibration" type:"path" placeholder:"FILE" help:"A calibration file (infscale load --calibrate) for this GPU and model: its fitted bandwidth efficiency, MFU, step overhead, sequence step cost and request overhead replace the base's; other flags still override."`
}

// Config builds and validates the replica configuration. Every problem is
// reported at once, each naming its flag and what is allowed; the error is
// an invalid-input error (exit 2).
func (f *ReplicaFlags) Config() (replica.Config, error) {
	c := replica.DefaultConfig()
	switch {
	case f.Calibrated && f.Fitted:
		return c, invalidf("--fitted: give --calibrated or --fitted, not both")
	case f.Calibrated:
		c = replica.Calibrated()
	case f.Fitted:
		c = replica.Fitted()
	}
	var errs []error
	flagErr := func(flag string, err error) { errs = append(errs, fmt.Errorf("--%s: %w", flag, err)) }
	var err error
	if c.GPU, err = replica.LookupGPU(f.gpu()); err != nil {
		flagErr("gpu", err)
	}
	switch {
	case f.ModelConfig != "" && f.Model != "":
		flagErr("model-config", errors.New("give --model or --model-config, not both"))
	case f.ModelConfig != "":
		if c.Model, err = loadModelConfig(f.ModelConfig); err != nil {
			flagErr("model-config", err)
		}
	default:
		if c.Model, err = replica.LookupModel(f.model()); err != nil {
			flagErr("model", err)
		}
	}
	setInt(&c.TP, f.TP)
	setInt(&c.MaxNumSeqs, f.MaxNumSeqs)
	setInt(&c.BlockSize, f.BlockSize)
	setFloat(&c.MemoryUtilization, f.MemoryUtilization)
	setFloat(&c.CPURequestCores, f.CPURequest)
	setFloat(&c.CPUIdleCores, f.CPUIdle)
	setFloat(&c.CPUEngineCores, f.CPUEngine)
	setFloat(&c.CPUPerSequenceCores, f.CPUPerSeq)
	// The calibration is checked against the replica only when its GPU
	// and model are known: against an unknown one it said "not  on 4 x
	// h100-sxm" beside the --model error.
	replicaKnown := len(errs) == 0
	setDuration(&c.AllReduceLatency, f.AllReduceLatency)
	setDuration(&c.ImagePull, f.ImagePull)
	setDuration(&c.WarmUp, f.WarmUp)
	if f.DType != nil {
		if c.WeightDType, err = replica.ParseDType(*f.DType); err != nil {
			flagErr("dtype", err)
		}
	}
	if f.KVDType != nil {
		if c.KVDType, err = replica.ParseDType(*f.KVDType); err != nil {
			// ParseDType lists the weight dtypes, int4 among them; KV has no int4.
			flagErr("kv-dtype", fmt.Errorf("unknown dtype %q (allowed: auto, fp16, bf16, fp8, int8)", *f.KVDType))
		}
	}
	if f.Accounting != nil {
		if c.Accounting, err = replica.ParseAccounting(*f.Accounting); err != nil {
			flagErr("accounting", err)
		}
	}
	// A size that does not parse keeps the base value, so Validate does not
	// report the same flag a second time as "0 is invalid".
	if f.Reserve != nil {
		switch v, err := parseBytes(*f.Reserve); {
		case err != nil:
			flagErr("reserve", err)
		case c.GPU.MemoryBytes > 0 && v >= c.GPU.MemoryBytes:
			// Per GPU: more GPUs (--tp), the model's "does not fit"
			// advice, would not help.
			flagErr("reserve", fmt.Errorf("%s is the whole memory of one %s (%g GB) or more: it is kept on each GPU besides the weights, e.g. 4GB", *f.Reserve, c.GPU.Name, c.GPU.MemoryBytes/1e9))
		default:
			c.ReserveBytes = v
		}
	}
	if f.WeightLoadRate != nil {
		// A rate: 1Gb is a storage or network link's bits, not bytes.
		if v, err := parseLinkBytes(*f.WeightLoadRate); err != nil {
			flagErr("weight-load-rate", err)
		} else {
			c.WeightLoadBytesPerSecond = v
		}
	}
	if f.BlockSize != nil && c.Accounting != replica.AccountingVLLM {
		flagErr("block-size", fmt.Errorf("applies to vllm accounting only (--accounting vllm or --calibrated); %s accounting has no blocks", c.Accounting))
	}
	// The calibration goes on the replica the other flags made (its dtype,
	// accounting, all-reduce latency: Apply checks that the file's fit
	// points come out as the fit predicted them, on the replica the fit
	// ran on), and the explicit flags of the terms it sets still override
	// (set after it).
	if f.Calibration != "" {
		cal, err := replica.LoadCalibration(f.Calibration)
		if errors.Is(err, fs.ErrNotExist) {
			err = fmt.Errorf("%s: no such file (write one with infscale load --calibrate or backtest --calibrate)", f.Calibration)
		}
		if err == nil && replicaKnown {
			c, err = cal.Apply(c)
		}
		if err != nil {
			flagErr("calibration", err)
		}
	}
	setFloat(&c.MFU, f.MFU)
	setFloat(&c.BandwidthEfficiency, f.BandwidthEfficiency)
	setDuration(&c.StepOverhead, f.StepOverhead)
	setDuration(&c.SequenceStepCost, f.SequenceStepCost)
	setDuration(&c.RequestOverhead, f.RequestOverhead)
	// Validate only what the lookups did not already reject.
	if err := c.Validate(); err != nil {
		for _, e := range unjoin(err) {
			var fe *replica.FieldError
			if errors.As(e, &fe) && (fe.Field == "gpu" || fe.Field == "model") && len(errs) > 0 {
				continue
			}
			if errors.As(e, &fe) {
				errs = append(errs, fmt.Errorf("--%s: %s is invalid (allowed: %s)", fe.Field, fe.Value, fe.Allowed))
				continue
			}
			errs = append(errs, e)
		}
	} else if _, err := replica.New(c); err != nil {
		// What New derives (the weights' load time) named by its flag;
		// ErrDoesNotFit is the callers'.
		var fe *replica.FieldError
		switch {
		case errors.As(err, &fe) && fe.Field == replica.FieldStep: // no flag of its own: several add up to it
			errs = append(errs, fmt.Errorf("the replica's decode step: %s is invalid (allowed: %s)", fe.Value, fe.Allowed))
		case errors.As(err, &fe):
			errs = append(errs, fmt.Errorf("--%s: %s is invalid (allowed: %s)", fe.Field, fe.Value, fe.Allowed))
		}
	}
	if len(errs) > 0 {
		return c, invalid(errors.Join(errs...))
	}
	return c, nil
}

// Default GPU and model of the replica flags.
const (
	defaultGPU   = "h100-sxm"
	defaultModel = "llama-3-8b"
)

func (f *ReplicaFlags) gpu() string {
	if f.GPU == "" {
		return defaultGPU
	}
	return f.GPU
}

func (f *ReplicaFlags) model() string {
	if f.Model == "" {
		return defaultModel
	}
	return f.Model
}

// fromTarget takes a serve config target's replica: (nil: none) for the
// replica flags not given: gpu, model, tp and, when calibration is true,
// calibration. The flags given win key by key; the target's calibration
// is fitted to its own GPU, model and TP, so it is taken only when the
// flags keep all three.
func (f *ReplicaFlags) fromTarget(r *config.Replica, calibration bool) {
	if r == nil {
		return
	}
	tp := max(r.TP, 1)
	same := (f.GPU == "" || f.GPU == r.GPU) && (f.Model == "" || f.Model == r.Model) && (f.TP == nil || *f.TP == tp)
	calibration = calibration && same
	if f.GPU == "" {
		f.GPU = r.GPU
	}
	if f.Model == "" && f.ModelConfig == "" {
		f.Model = r.Model
		f.ModelConfig = r.ModelConfig
	}
	if f.TP == nil && r.TP > 0 {
		tp := r.TP
		f.TP = &tp
	}
	if calibration && f.Calibration == "" {
		f.Calibration = r.Calibration
	}
}

// calibratedName names the replica for a legend when --calibration
// applies a file ("the replica calibrated from FILE"), else "".
func (f *ReplicaFlags) calibratedName() string {
	if f.Calibration == "" {
		return ""
	}
	return "the replica calibrated from " + f.Calibration
}

// Replica builds the validated replica; a configuration that does not fit
// in memory is invalid input too.
func (f *ReplicaFlags) Replica() (*replica.Replica, error) {
	c, err := f.Config()
	if err != nil {
		return nil, err
	}
	r, err := replica.New(c)
	if err != nil {
		return nil, invalid(err)
	}
	return r, nil
}

func setInt(dst *int, v *int) {
	if v != nil {
		*dst = *v
	}
}

func setFloat(dst *float64, v *float64) {
	if v != nil {
		*dst = *v
	}
}

func setDuration(dst *time.Duration, v *time.Duration) {
	if v != nil {
		*dst = *v
	}
}

func unjoin(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		return j.Unwrap()
	}
	return []error{err}
}

// byteUnits are the suffixes parseBytes accepts, longest first.
var byteUnits = []struct {
	suffix string
	scale  float64
}{
	{"kib", 1 << 10}, {"mib", 1 << 20}, {"gib", 1 << 30}, {"tib", 1 << 40},
	{"kb", 1e3}, {"mb", 1e6}, {"gb", 1e9}, {"tb", 1e12}, {"b", 1},
}

// loadModelConfig reads --model-config FILE (replica.LoadHFConfig); an
// empty file (or one of only white space) is refused by name, not as the
// JSON decoder's bare "EOF".
func loadModelConfig(path string) (replica.Model, error) {
	data, err := replica.ReadHFConfig(path)
	if errors.Is(err, fs.ErrNotExist) {
		return replica.Model{}, fmt.Errorf("%s: no such file", path)
	}
	if err != nil {
		return replica.Model{}, err
	}
	if len(bytes.TrimSpace(data)) == 0 {
		return replica.Model{}, fmt.Errorf("%s is empty: want a Hugging Face config.json (a JSON object with hidden_size, num_hidden_layers, ...), e.g. the model repository's config.json", path)
	}
	return replica.LoadHFConfig(path)
}

// bitRate matches a rate written in bits (10Gb, 10 Gbit/s, 100Mbps): a
// lowercase b after the number or prefix, as network links are quoted.
var bitRate = regexp.MustCompile(`^[0-9.eE+-]+\s*([kKmMgGtT]i?)?(b|bit|bits|bps)(/s)?$`)

// parseLinkBytes reads a link's bandwidth in bytes per second as
// parseBytes does, refusing one written in bits (10Gb is 1.25 GB/s, not
// 10), which parseBytes would read as bytes.
func parseLinkBytes(s string) (float64, error) {
	t := strings.TrimSpace(s)
	if m := bitRate.FindStringSubmatch(t); m != nil {
		return 0, fmt.Errorf("%q is in bits (a lowercase b): want bytes per second with a capital B, a link's bits / 8 (10 Gb/s is 1.25GB, 200 Gb/s is 25GB)", s)
	}
	return parseBytes(s)
}

// parseBytes reads "4GB", "3.05GiB", "500MB", "1e9B" or a bare number of GB.
func parseBytes(s string) (float64, error) {
	t := strings.ToLower(strings.TrimSpace(s))
	scale := 1e9
	for _, u := range byteUnits {
		if strings.HasSuffix(t, u.suffix) {
			t, scale = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.scale
			break
		}
	}
	v, err := quantity.Decimal(t)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, fmt.Errorf("%q is not a size (allowed: a number >= 0 with B, kB, MB, GB, TB, KiB, MiB, GiB or TiB; bare numbers are GB)", s)
	}
	if math.IsInf(v*scale, 0) { // 1e300TB: finite, but not in bytes
		return 0, fmt.Errorf("%q is %w: want a size in float64's range (at most 1.7e308 bytes), e.g. 4GB", s, errSizeTooLarge)
	}
	return v * scale, nil
}

// errSizeTooLarge is parseBytes's error for a size whose bytes pass
// float64, for a caller with a range of its own to name.
var errSizeTooLarge = errors.New("too large")

// GPUCmd is `infscale gpu`: what one replica can do, derived from the GPU and
// the model. With no flags it prints docs/design.md's reference block.
type GPUCmd struct {
	ReplicaFlags `embed:""`
	Context      int    `name:"context" default:"1000" help:"Context tokens per sequence for the decode step figures."`
	Output       string `name:"output" short:"o" default:"text" enum:"text,json" help:"Output format: text or json."`
	List         bool   `name:"list" help:"List the GPU catalog (memory, bandwidth, FLOPS) and the model catalog (parameters, layers, KV shape) instead."`
	PD           string `name:"pd" placeholder:"RATE,PROMPT,OUTPUT" help:"Also size a prefill/decode pair of this replica for a steady load: RATE requests/s of PROMPT-token prompts and OUTPUT-token outputs (mean-value, docs/llm-d.md): prefill replicas busy, decode slots and sequences, the KV moved per request."`
	KVLink       string `name:"kv-link" default:"25GB" help:"With --pd: the KV link between the pools, bytes per second, e.g. 25GB (RDMA), 1.25GB (10 GbE), or nvlink (the GPU catalog's GPU-to-GPU link); a bare number is GB."`
}

// Run prints the replica block (or the catalogs with --list).
func (c *GPUCmd) Run(e *env) error {
	if c.List {
		// The catalogs depend on no other flag: one given would be ignored
		// (an unknown --model printed the catalogs, exit 0).
		var other []string
		for name := range e.given {
			if name != "list" && name != "output" {
				other = append(other, "--"+name)
			}
		}
		if len(other) > 0 {
			sort.Strings(other)
			return invalidf("--list prints the catalogs: %s would be ignored; drop --list to size a replica", strings.Join(other, ", "))
		}
		return writeCatalogs(e.stdout, c.Output)
	}
	if err := needsFlag(e.given, "kv-link", c.PD != "", "--pd"); err != nil {
		return err
	}
	if c.Context < 1 {
		return invalidf("--context: %d is invalid (allowed: an integer >= 1)", c.Context)
	}
	r, err := c.Replica()
	if err != nil {
		return err
	}
	if int64(c.Context) > r.KVCapacityTokens() {
		return invalidf("--context: %d tokens do not fit this replica's KV cache of %d tokens (allowed: 1 to %d)",
			c.Context, r.KVCapacityTokens(), r.KVCapacityTokens())
	}
	s := r.Summarize(c.Context)
	var pd *replica.PD
	if c.PD != "" {
		p, err := c.pd(r)
		if err != nil {
			return err
		}
		pd = &p
	}
	if c.Output == "json" {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if pd != nil {
			return enc.Encode(struct {
				replica.Summary
				PD *replica.PD `json:"pd"`
			}{s, pd})
		}
		return enc.Encode(s)
	}
	if err := writeSummary(e.stdout, r, s); err != nil || pd == nil {
		return err
	}
	_, err = fmt.Fprintf(e.stdout, "P/D pair at %s (requests/s, prompt, output tokens): prefill %.2f replica busy; decode %.1f sequences of %d slots a replica (%.2f replica busy), step %s ms; KV %s per request, %s ms at %s\n",
		c.PD, pd.PrefillBusy, pd.DecodeSequences, pd.DecodeSlots, pd.DecodeBusy, millis(pd.StepSeconds), formatBytes(pd.TransferBytes), millis(pd.TransferSeconds), linkName(c.KVLink, pd))
	return err
}

// linkName is --kv-link's rate as the P/D line prints it: as given
// ("25GB/s"), or for nvlink its bandwidth (the KV moved over the time it
// took) and the name ("450 GB/s (nvlink)").
func linkName(flag string, pd *replica.PD) string {
	if !strings.EqualFold(strings.TrimSpace(flag), "nvlink") || !(pd.TransferSeconds > 0) {
		return flag + "/s"
	}
	return formatBytes(pd.TransferBytes/pd.TransferSeconds) + "/s (nvlink)"
}

// maxPDRate and maxPDTokens bound --pd's rate and lengths as load bounds
// its rates and lengths: beyond them the pair's figures are dozens of
// digits of no deployment.
const (
	maxPDRate   = 1e6
	maxPDTokens = 1 << 20
)

// pd reads --pd RATE,PROMPT,OUTPUT and --kv-link and sizes the pair.
func (c *GPUCmd) pd(r *replica.Replica) (replica.PD, error) {
	parts := strings.Split(c.PD, ",")
	if len(parts) != 3 {
		return replica.PD{}, invalidf("--pd: %q is invalid (allowed: RATE,PROMPT,OUTPUT, e.g. 10,2000,200)", c.PD)
	}
	rate, err1 := quantity.Decimal(parts[0])
	prompt, err2 := strconv.Atoi(parts[1])
	output, err3 := strconv.Atoi(parts[2])
	if err1 != nil || err2 != nil || err3 != nil || !(rate <= maxPDRate) || prompt > maxPDTokens || output > maxPDTokens {
		return replica.PD{}, invalidf("--pd: %q is invalid (allowed: RATE,PROMPT,OUTPUT: requests/s > 0 and at most %g, whole tokens 1 to %d, e.g. 10,2000,200)", c.PD, float64(maxPDRate), maxPDTokens)
	}
	link, err := kvLink(c.KVLink, r) // as simulate --pd reads it, nvlink included
	if err != nil {
		return replica.PD{}, err
	}
	p, err := r.PD(rate, prompt, output, link)
	if err != nil {
		return replica.PD{}, invalidf("--pd %s: %v", c.PD, err)
	}
	return p, nil
}

// writeSummary prints the text block in docs/design.md's wording and rounding.
func writeSummary(w io.Writer, r *replica.Replica, s replica.Summary) error {
	cfg := r.Config()
	b := &strings.Builder{}
	fmt.Fprintf(b, "%s (%s) %s on %d x %s (%s), %s accounting\n",
		s.Model, cfg.Model.HFRepo, s.WeightDType, s.TP, s.GPU, cfg.GPU.Description, s.Accounting)
	if s.Accounting == replica.AccountingVLLM {
		fmt.Fprintf(b, "weights %.2f GiB\n", s.WeightsBytes/(1<<30))
		fmt.Fprintf(b, "KV cache %.2f GiB free per GPU = %d blocks of %d tokens = %d tokens\n",
			s.KVFreeBytes/float64(s.TP)/(1<<30), s.KVBlocks, s.BlockSize, s.KVCapacityTokens)
	} else {
		fmt.Fprintf(b, "weights %.1f GB\n", s.WeightsBytes/1e9)
		fmt.Fprintf(b, "KV cache %.1f GB free = %d tokens\n", s.KVFreeBytes/1e9, s.KVCapacityTokens)
	}
	fmt.Fprintf(b, "prefill %.0f tokens/s\n", s.PrefillTokensPerSecond)
	if s.RequestOverheadSeconds > 0 {
		fmt.Fprintf(b, "request overhead %.1f ms before the scheduler: TTFT at low load = %.1f ms + the prefill\n", s.RequestOverheadSeconds*1000, s.RequestOverheadSeconds*1000)
	}
	fmt.Fprintf(b, "decode step %s ms at batch 1, %s ms at batch %d (%d-token contexts): %.0f output tokens/s at full batch\n",
		millis(s.StepBatch1Seconds), millis(s.StepFullBatchSeconds), s.FullBatch, s.ContextTokens, s.OutputTokensPerSecond)
	fmt.Fprintf(b, "cold start %.0f s = image %.0f s + weights %.0f s at %s/s + warm-up %.0f s\n",
		s.ColdStartSeconds, s.ImagePullSeconds, s.WeightLoadSeconds, formatBytes(s.WeightLoadBytesPerSecond), s.WarmUpSeconds)
	fmt.Fprintf(b, "pod CPU idle %.0f%%, batch 1 %.0f%%, batch %d %.0f%% of %s requested cores, whatever the queue\n",
		s.CPUIdlePercent, s.CPUBatch1Percent, s.FullBatch, s.CPUFullBatchPercent, strconv.FormatFloat(s.CPURequestCores, 'g', -1, 64))
	_, err := io.WriteString(w, b.String())
	return err
}

// millis prints seconds as milliseconds with one decimal (docs/design.md's "6.9
// ms"), or two significant digits below 0.1 ms, which one decimal would
// print as 0.0.
func millis(sec float64) string {
	ms := sec * 1e3
	if ms < 0.05 {
		return strconv.FormatFloat(ms, 'g', 2, 64)
	}
	return strconv.FormatFloat(ms, 'f', 1, 64)
}

// formatBytes prints a decimal size compactly: 1e9 -> "1 GB".
func formatBytes(v float64) string {
	for _, u := range []struct {
		name  string
		scale float64
	}{{"TB", 1e12}, {"GB", 1e9}, {"MB", 1e6}, {"kB", 1e3}} {
		if v >= u.scale {
			return strconv.FormatFloat(v/u.scale, 'g', 4, 64) + " " + u.name
		}
	}
	return strconv.FormatFloat(v, 'g', 4, 64) + " B"
}

// catalogs is the --list --output json shape.
type catalogs struct {
	GPUs   []replica.GPU  `json:"gpus"`
	Models []catalogModel `json:"models"`
}

// catalogModel adds the derived parameter counts to a catalog model.
type catalogModel struct {
	replica.Model
	Params       float64 `json:"params"`
	ActiveParams float64 `json:"active_params"`
}

func writeCatalogs(w io.Writer, output string) error {
	var ms []catalogModel
	for _, m := range replica.Models() {
		ms = append(ms, catalogModel{Model: m, Params: m.Params(), ActiveParams: m.ActiveParams()})
	}
	if output == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(catalogs{GPUs: replica.GPUs(), Models: ms})
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "GPU\tmemory\tbandwidth\tBF16 dense\tFP8 dense\tdescription")
	for _, g := range replica.GPUs() {
		fp8 := "-"
		if g.FP8FLOPS > 0 {
			fp8 = fmt.Sprintf("%g TFLOPS", g.FP8FLOPS/1e12)
		}
		fmt.Fprintf(tw, "%s\t%g GB\t%g TB/s\t%g TFLOPS\t%s\t%s\n", g.Name, g.MemoryBytes/1e9,
			g.BandwidthBytesPerSecond/1e12, g.BF16FLOPS/1e12, fp8, g.Description)
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "model\tparams\tactive\tlayers\tKV heads x dim\thidden\tKV bytes/token (16-bit)\tHugging Face")
	for _, m := range ms {
		fmt.Fprintf(tw, "%s\t%.2fB\t%.2fB\t%d\t%d x %d\t%d\t%.0f\t%s\n", m.Name, m.Params/1e9, m.ActiveParams/1e9,
			m.Layers, m.KVHeads, m.HeadDim, m.Hidden, m.KVBytesPerToken(replica.DTypeBF16), m.HFRepo)
	}
	return tw.Flush()
}
