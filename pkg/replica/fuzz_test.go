package replica

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// checkReplica fails t when a replica New accepted gives a figure that is
// not finite and positive (a step, a prefill, a cold start, a capacity):
// what a user's file loads into must never reach a decision as NaN, Inf or
// a negative time.
func checkReplica(t *testing.T, what string, r *Replica) {
	t.Helper()
	figures := map[string]float64{
		"weights bytes":       r.WeightsBytes(),
		"KV bytes per token":  r.KVBytesPerToken(),
		"KV capacity tokens":  float64(r.KVCapacityTokens()),
		"max batch":           float64(r.MaxBatch()),
		"step(1, 0)":          r.StepTime(1, 0),
		"step(max, capacity)": r.StepTime(r.MaxBatch(), r.KVCapacityTokens()),
		"prefill(1)":          r.PrefillTime(1),
		"prefill(8192)":       r.PrefillTime(8192),
		"prefill rate":        r.PrefillTokensPerSecond(),
		"cold start":          r.ColdStart(),
		"TPOT(max, 512, 128)": r.ClosedLoopTPOT(r.MaxBatch(), 512, 128),
	}
	for name, v := range figures {
		if !(v > 0) || math.IsInf(v, 0) {
			t.Fatalf("%s: %s = %v, want a finite figure > 0", what, name, v)
		}
	}
	if v := r.RequestOverhead(); !(v >= 0) || math.IsInf(v, 0) {
		t.Fatalf("%s: request overhead = %v, want finite >= 0", what, v)
	}
}

// FuzzParseHFConfig: any config.json either is an error naming the file,
// or a model whose replica (where one fits on a GPU of the catalog) has
// finite, positive figures.
func FuzzParseHFConfig(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "hf", "*.json"))
	for _, p := range files {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"num_hidden_layers":2,"hidden_size":64,"intermediate_size":128,"num_attention_heads":4,"vocab_size":100,"num_local_experts":4,"num_experts_per_tok":2,"sliding_window":16,"layer_types":["sliding_attention","full_attention"]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		const file = "fuzz/config.json"
		m, err := ParseHFConfig(file, "fuzz", data)
		if err != nil {
			if !strings.Contains(err.Error(), file) {
				t.Fatalf("error without the file: %v", err)
			}
			return
		}
		if p := m.Params(); !(p > 0) || math.IsInf(p, 0) {
			t.Fatalf("params %v of %+v", p, m)
		}
		if kv := m.KVBytesPerToken(DTypeBF16); !(kv > 0) || math.IsInf(kv, 0) {
			t.Fatalf("KV bytes per token %v of %+v", kv, m)
		}
		for _, base := range []Config{DefaultConfig(), Calibrated()} {
			cfg := base
			cfg.Model = m
			for _, g := range []string{"h100-sxm", "b200"} {
				cfg.GPU, _ = LookupGPU(g)
				for _, tp := range []int{1, 8} {
					cfg.TP = tp
					r, err := New(cfg)
					if err != nil {
						continue
					}
					checkReplica(t, g, r)
				}
			}
		}
	})
}

// FuzzLoadCalibration: any calibration file either is an error naming the
// file, or one that applies to a replica of its GPU, model and TP (when
// the model is in the catalog) whose figures are finite and positive.
func FuzzLoadCalibration(f *testing.F) {
	for _, p := range []string{"../../examples/vllm-0.21-h100-llama-3.1-8b.calibration.json"} {
		b, err := os.ReadFile(p)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"kind":"infscale-calibration","version":1,"gpu":"h100","model":"llama-3.1-8b","tp":1,"bandwidth_efficiency":0.8,"mfu":0.5,"step_overhead_s":0.002,"sequence_step_cost_s":0,"request_overhead_s":0.01,"fit":[{"batch":1,"context_tokens":100,"step_s":0.007}],"prefill":[{"prompt_tokens":100,"ttft_s":0.02}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(t.TempDir(), "c.calibration.json")
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := LoadCalibration(path)
		if err != nil {
			if !strings.Contains(err.Error(), path) {
				t.Fatalf("error without the file: %v", err)
			}
			return
		}
		m, err := LookupModel(c.Model)
		if err != nil {
			return
		}
		for _, base := range []Config{DefaultConfig(), Calibrated()} {
			cfg := base
			cfg.GPU, _ = LookupGPU(c.GPU)
			cfg.Model, cfg.TP = m, c.TP
			cfg, err := c.Apply(cfg)
			if err != nil {
				if !strings.Contains(err.Error(), path) && !strings.Contains(err.Error(), "calibration fitted for") {
					t.Fatalf("Apply: error without the file: %v", err)
				}
				continue
			}
			r, err := New(cfg)
			if err != nil {
				continue
			}
			checkReplica(t, "calibrated", r)
		}
	})
}
