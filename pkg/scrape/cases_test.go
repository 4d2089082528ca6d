package scrape

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/infscale/infscale/pkg/modelserver"
)

// TestCases checks the page-reading cases of shared/testdata/cases against
// their NN-*.expected.md.
func TestCases(t *testing.T) {
	dir := sharedDir(t, "cases")
	read := func(t *testing.T, name string) *Page {
		t.Helper()
		p, err := readFile(t, filepath.Join(dir, name), modelserver.Unknown)
		if err != nil {
			t.Fatalf("Read %s: %v", name, err)
		}
		return p
	}

	t.Run("C06 data-parallel engines are summed, KV is the max", func(t *testing.T) {
		p := read(t, "06-vllm-dp-engine-series.prom")
		// running 7 + 3 = 10; waiting 4 + 0 = 4; kv max(0.91, 0.35) = 0.91
		// (the mean 0.63 would hide the saturated engine).
		checkFloat(t, "running", p.Running, 10)
		checkFloat(t, "waiting", p.Waiting, 4)
		checkFloat(t, "kv", p.KV, 0.91)
		if p.Engines != 2 || p.Suspect != "" {
			t.Errorf("engines %d suspect %q, want 2 and none", p.Engines, p.Suspect)
		}
	})

	t.Run("C08 KV rename: prefer new name, fall back, never add", func(t *testing.T) {
		for file, from := range map[string]string{
			"08-vllm-kv-metric-rename.v0_6.prom":  "vllm:gpu_cache_usage_perc",
			"08-vllm-kv-metric-rename.v0_9.prom":  "vllm:kv_cache_usage_perc", // both present: 0.42, not 0.84
			"08-vllm-kv-metric-rename.v0_12.prom": "vllm:kv_cache_usage_perc",
		} {
			p := read(t, file)
			checkFloat(t, file+" kv", p.KV, 0.42)
			if p.Chosen.KV != from {
				t.Errorf("%s: kv read from %q, want %q", file, p.Chosen.KV, from)
			}
		}
	})

	t.Run("C09 declared families without samples are ABSENT, no error", func(t *testing.T) {
		p := read(t, "09-metrics-absent-before-first-request.prom")
		if p.Server != modelserver.VLLM {
			t.Errorf("server %v, want vllm (from the declared families)", p.Server)
		}
		checkFloat(t, "running", p.Running, A)
		checkFloat(t, "waiting", p.Waiting, A)
		checkFloat(t, "kv", p.KV, A)
		if p.Reporting() || p.Engines != 0 {
			t.Errorf("reporting %v engines %d, want a replica that does not report", p.Reporting(), p.Engines)
		}
	})

	t.Run("C15 escaped label values decode; invalid page is an error", func(t *testing.T) {
		p := read(t, "15-label-value-escaping.valid.prom")
		byModel := p.SumBy("vllm:num_requests_running", "model_name")
		// `team \"a\" model\\v2` decodes to: team "a" model\v2
		if byModel[`team "a" model\v2`] != 3 || byModel["plain"] != 1 || len(byModel) != 2 {
			t.Errorf("running by model = %v, want {team \"a\" model\\v2: 3, plain: 1}", byModel)
		}
		checkFloat(t, "running", p.Running, 4) // 3 + 1

		bad, err := readFile(t, filepath.Join(dir, "15-label-value-escaping.invalid.prom"), modelserver.Unknown)
		if bad != nil {
			t.Errorf("invalid page returned a partial page %+v", bad)
		}
		var pe *PageError
		if !errors.As(err, &pe) || !errors.Is(err, ErrInvalidPage) {
			t.Fatalf("err = %v, want a *PageError wrapping ErrInvalidPage", err)
		}
		// line 2 holds the unescaped quote: name="MacBook Pro 14" registry R/W"
		if pe.Line != 2 || !strings.HasPrefix(err.Error(), "15-label-value-escaping.invalid.prom:2: ") {
			t.Errorf("err = %q (line %d), want it to name 15-label-value-escaping.invalid.prom:2", err, pe.Line)
		}
		// The invalid page with a forced server is still an error, not zeros.
		if _, err := readFile(t, filepath.Join(dir, "15-label-value-escaping.invalid.prom"), modelserver.VLLM); !errors.Is(err, ErrInvalidPage) {
			t.Errorf("forced server: err = %v, want ErrInvalidPage", err)
		}
	})

	t.Run("C18 stuck engine is flagged, values kept", func(t *testing.T) {
		p := read(t, "18-stuck-engine-not-load.prom")
		// waiting 6 > 0, running 0, kv 0 -> suspect; nothing invented.
		checkFloat(t, "running", p.Running, 0)
		checkFloat(t, "waiting", p.Waiting, 6)
		checkFloat(t, "kv", p.KV, 0)
		if !strings.Contains(p.Suspect, "stuck") {
			t.Errorf("suspect = %q, want a stuck-engine flag", p.Suspect)
		}
		tot := Aggregate([]*Page{p})
		if len(tot.Suspect) != 1 || tot.Suspect[0] != p.Source {
			t.Errorf("aggregate suspect = %v, want [%s]", tot.Suspect, p.Source)
		}
	})

	t.Run("C20 LoRA and info gauges are not load", func(t *testing.T) {
		p := read(t, "20-lora-and-info-metrics.prom")
		// one base model, running 2 (not 2 + 5.2e9 from summing the info gauge)
		checkFloat(t, "running", p.Running, 2)
		checkFloat(t, "waiting", p.Waiting, A)
		wantModels(t, p, "meta-llama/Llama-2-7b-hf")
		// latest state: max value 1.7395575723949368e+09 -> running test-lora, waiting none
		wantLoRA(t, p, []string{"test-lora"}, nil, 1.7395575723949368e+09)
	})

	t.Run("C02 NaN and ±Inf values are ABSENT", func(t *testing.T) {
		for i, v := range c02Values(t, filepath.Join(dir, "02-prometheus-nan-and-inf-values.json")) {
			page := fmt.Sprintf("vllm:num_requests_waiting{model_name=\"m\"} %s\nvllm:num_requests_running{model_name=\"m\"} %s\nvllm:kv_cache_usage_perc{model_name=\"m\"} %s\n", v, v, v)
			p := readString(t, page, modelserver.Unknown)
			if !math.IsNaN(p.Waiting) || !math.IsNaN(p.Running) || !math.IsNaN(p.KV) || p.Reporting() {
				t.Errorf("value %d %q: running %v waiting %v kv %v, want all ABSENT", i, v, p.Running, p.Waiting, p.KV)
			}
		}
	})
}

// c02Values extracts the sample values ("NaN", "+Inf", "-Inf") of the three
// Prometheus API responses in case C02.
func c02Values(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var resp struct {
			Data struct {
				Result []struct {
					Value [2]any `json:"value"`
				} `json:"result"`
			} `json:"data"`
		}
		if err := json.Unmarshal(sc.Bytes(), &resp); err != nil {
			t.Fatal(err)
		}
		for _, r := range resp.Data.Result {
			out = append(out, r.Value[1].(string))
		}
	}
	if len(out) != 3 {
		t.Fatalf("C02 values = %v, want 3", out)
	}
	return out
}
