package replica

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLoadCalibrationAllProblems: a file with several problems of
// different kinds (a key given twice, an unknown key, two values of the
// wrong type, a value out of range, a GPU outside the catalog) reports
// them all in one run, each at its line:column; it reported the first
// kind found and stopped (fix one, rerun, see the next). A key whose value
// has the wrong type is not also said to be missing or out of range.
func TestLoadCalibrationAllProblems(t *testing.T) {
	body := `{
  "kind": "infscale-calibration",
  "version": 1,
  "gpu": "h100-nvl",
  "model": "llama-3-8b",
  "tp": "one",
  "bandwidth_efficiency": 0.7,
  "bandwidth_efficiency": 0.8,
  "mfu": 2,
  "step_overhead_s": 0.001,
  "sequence_step_cost_s": 0.0001,
  "request_overhead_s": 0.01,
  "fit": [{"batch": 1, "step_s": 0.007}, {"batch": "two", "step_s": -1}],
  "prefil": []
}
`
	p := filepath.Join(t.TempDir(), "cal.json")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadCalibration(p)
	if err == nil {
		t.Fatal("accepted")
	}
	want := []string{
		p + `:8:3: bandwidth_efficiency: key given twice (first at 7:3); give it once`,
		p + `:14:3: unknown key "prefil" (allowed: `,
		p + `:6:9: tp: "one": want a whole number`,
		p + `:13:52: fit[1].batch: "two": want a whole number`,
		p + `:9:10: mfu 2: want a fraction from 0.01 to 1`,
		p + `:13:69: fit[1].step_s -1: want seconds > 0`,
		p + `:4:10: gpu: unknown GPU "h100-nvl"`,
	}
	lines := strings.Split(err.Error(), "\n")
	if len(lines) != len(want) {
		t.Errorf("%d problems, want %d:\n%v", len(lines), len(want), err)
	}
	for i, w := range want {
		if i >= len(lines) || !strings.HasPrefix(lines[i], w) {
			t.Errorf("problem %d: want prefix\n%s\nin:\n%v", i, w, err)
		}
	}
	if strings.Contains(err.Error(), "tp 0") || strings.Contains(err.Error(), "fit[1].batch 0") || strings.Contains(err.Error(), "batch: missing") {
		t.Errorf("a key of the wrong type reported again:\n%v", err)
	}
}

// TestLoadCalibrationProblemsBounded: 30 points of the wrong type are the
// first 20 problems and one line saying how many more.
func TestLoadCalibrationProblemsBounded(t *testing.T) {
	var pts []string
	for range 30 {
		pts = append(pts, `{"batch": "x", "step_s": 0.007}`)
	}
	body := fmt.Sprintf(`{"kind": "infscale-calibration", "version": 1, "gpu": "h100-sxm", "model": "llama-3-8b", "tp": 1,
"bandwidth_efficiency": 0.7, "mfu": 0.4, "step_overhead_s": 0.001, "sequence_step_cost_s": 0.0001, "request_overhead_s": 0.01,
"fit": [%s]}`, strings.Join(pts, ", "))
	p := filepath.Join(t.TempDir(), "cal.json")
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadCalibration(p)
	lines := strings.Split(fmt.Sprint(err), "\n")
	if len(lines) != 21 || !strings.Contains(lines[19], "fit[19].batch") || lines[20] != p+": 10 more problem(s) not listed" {
		t.Errorf("%d lines, want 20 problems and one more line:\n%v", len(lines), err)
	}
}
