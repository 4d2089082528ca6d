package scrape

import (
	"bufio"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/modelserver"
)

// tsvRows reads a tab-separated case file, skipping the # header.
func tsvRows(t *testing.T, path string) [][]string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var rows [][]string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := sc.Text(); line != "" && !strings.HasPrefix(line, "#") {
			rows = append(rows, strings.Split(line, "\t"))
		}
	}
	return rows
}

func atof(t *testing.T, s string) float64 {
	t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestRateC04CounterReset: cases/04 (scrape time, process start,
// vllm:prompt_tokens_total) must give 200, 53.3, 200 tokens/s:
//
//	t+0 ->t+15: (123000-120000)/15 = 200
//	t+15->t+30: 800 < 123000 and start time changed: reset, increase = 800; 800/15 = 53.33
//	t+30->t+45: (3800-800)/15 = 200
func TestRateC04CounterReset(t *testing.T) {
	rows := tsvRows(t, filepath.Join(sharedDir(t, "cases"), "04-counter-reset-after-restart.tsv"))
	var pages []*Page
	for _, r := range rows {
		page := fmt.Sprintf("process_start_time_seconds %s\nvllm:prompt_tokens_total{model_name=\"m\"} %s\n", r[1], r[2])
		p := readString(t, page, modelserver.VLLM)
		p.Time = time.Unix(int64(atof(t, r[0])), 0)
		pages = append(pages, p)
	}
	if len(pages) != 4 {
		t.Fatalf("rows = %d, want 4", len(pages))
	}
	if r := Rate(nil, pages[0]); !math.IsNaN(r.PromptTokens) {
		t.Errorf("first scrape: %v tokens/s, want UNKNOWN (no baseline)", r.PromptTokens)
	}
	want := []struct {
		rate  float64
		reset bool
	}{{200, false}, {800.0 / 15, true}, {200, false}}
	for i, w := range want {
		r := Rate(pages[i], pages[i+1])
		checkFloat(t, fmt.Sprintf("interval %d prompt tokens/s", i+1), r.PromptTokens, w.rate)
		if r.Reset != w.reset || r.PromptTokens < 0 || r.Interval != 15*time.Second {
			t.Errorf("interval %d: reset %v interval %v rate %v, want reset %v over 15s", i+1, r.Reset, r.Interval, r.PromptTokens, w.reset)
		}
	}
}

// TestRateC05CounterUsedAsGauge: cases/05, requests_total stuck at 50 every
// 15 s: the rate is (50-50)/15 = 0 req/s (not 50), and UNKNOWN before a
// baseline exists.
func TestRateC05CounterUsedAsGauge(t *testing.T) {
	rows := tsvRows(t, filepath.Join(sharedDir(t, "cases"), "05-counter-used-as-gauge.tsv"))
	var prev *Page
	for i, r := range rows {
		p := readString(t, fmt.Sprintf("vllm:request_success_total{finished_reason=\"stop\"} %s\n", r[1]), modelserver.VLLM)
		p.Time = t0.Add(time.Duration(atof(t, r[0])) * time.Second)
		got := Rate(prev, p)
		if i == 0 {
			checkFloat(t, "first scrape req/s", got.Requests, A)
		} else {
			checkFloat(t, fmt.Sprintf("t=%ss req/s", r[0]), got.Requests, 0)
		}
		prev = p
	}
	if len(rows) != 4 {
		t.Errorf("rows = %d, want 4", len(rows))
	}
}

// TestRatePerSeries: increases are taken per series, then summed.
func TestRatePerSeries(t *testing.T) {
	at := func(sec int, page string) *Page {
		p := readString(t, page, modelserver.VLLM)
		p.Time = t0.Add(time.Duration(sec) * time.Second)
		return p
	}
	prev := at(0, `vllm:request_success_total{finished_reason="stop"} 100
vllm:request_success_total{finished_reason="length"} 40
vllm:generation_tokens_total 1000
vllm:prompt_tokens_total 500
process_cpu_seconds_total 10
vllm:num_requests_waiting 3
`)
	cur := at(10, `vllm:request_success_total{finished_reason="stop"} 130
vllm:request_success_total{finished_reason="length"} 5
vllm:request_success_total{finished_reason="abort"} 2
vllm:generation_tokens_total 1000
vllm:prompt_tokens_total 500
process_cpu_seconds_total 16
vllm:num_requests_waiting 3
`)
	r := Rate(prev, cur)
	// stop +30, length reset 40 -> 5 counts 5, abort new series counts 2:
	// (30 + 5 + 2) / 10 s = 3.7 req/s. A sum-then-diff would give
	// (137 - 140) = -3 -> "reset" -> 13.7: wrong.
	checkFloat(t, "req/s", r.Requests, 3.7)
	if !r.Reset {
		t.Error("reset not reported")
	}
	// CPU (16 - 10) / 10 s = 0.6 cores; of a 4-core request = 15 %.
	checkFloat(t, "cpu cores", r.CPUCores, 0.6)
	checkFloat(t, "cpu %", r.CPUPercent(4), 15)
	checkFloat(t, "cpu % without request", r.CPUPercent(0), A)
	// waiting 3 while no token moved in 10 s: flagged.
	checkFloat(t, "gen tokens/s", r.GenerationTokens, 0)
	if !strings.Contains(r.Suspect, "stuck") {
		t.Errorf("suspect = %q, want a stuck flag", r.Suspect)
	}

	// No baseline: another source, same time, time going backwards.
	other := *cur
	other.Source = "other"
	for name, pair := range map[string][2]*Page{
		"other source": {prev, &other},
		"same time":    {cur, cur},
		"backwards":    {cur, prev},
	} {
		if r := Rate(pair[0], pair[1]); !math.IsNaN(r.Requests) || !math.IsNaN(r.CPUCores) || r.Interval != 0 {
			t.Errorf("%s: %+v, want all NaN", name, r)
		}
	}
	// A counter absent on one side is UNKNOWN, not 0.
	noCPU := at(20, "vllm:request_success_total{finished_reason=\"stop\"} 130\n")
	checkFloat(t, "cpu without counter", Rate(cur, noCPU).CPUCores, A)
}
