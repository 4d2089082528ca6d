package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/infscale/infscale/internal/sharedtest"
)

// TestDecideStuckPageDoesNotVote: testdata/vllm-stuck.prom (waiting 14,
// running 0, KV 0) beside vllm-running2-waiting10.prom, queue target 4,
// current 2 (the pages). The stuck page does not vote: queue 2 + 10 = 12
// over 1 reporting replica, 1 missing. usage 12 / 1 / 4 = 3 > 1 (scale-up):
// the missing one counts at 0, 3 / 2 = 1.5, ceil(1.5 x 2) = 3. Counted as
// load it would be queue 26, ratio 26 / (4 x 2) = 3.25, ceil(26 / 4) = 7,
// rate-limited to 2 + 4 = 6.
func TestDecideStuckPageDoesNotVote(t *testing.T) {
	args := []string{"testdata/vllm-stuck.prom", "testdata/vllm-running2-waiting10.prom", "--target", "4"}
	d := decideOK(t, args...)
	wantDecision(t, d, 3, "DesiredWithinRange")
	if q := d.Raw["queue"].Value; q == nil || *q != 12 {
		t.Errorf("queue %v, want 12 (the stuck page's 14 waiting left out)", q)
	}
	code, out, errs := runDecide(t, args...)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	want := "not voting: testdata/vllm-stuck.prom looks like a stuck engine (waiting 14"
	if !strings.Contains(out, want) || !strings.Contains(errs, "stuck engine") {
		t.Errorf("text output must say the page does not vote (%q)\nstdout:\n%s\nstderr:\n%s", want, out, errs)
	}
}

// TestDecideStuckCaseC18: the only page is the one of case C18 (docs/design.md; waiting 6,
// running 0, KV 0). It does not vote, so no signal is known: the HPA keeps
// the current 1 (reason no-data), where counting it would ask for
// ceil(6 / 4) = 2 and more for as long as the queue never drains.
func TestDecideStuckCaseC18(t *testing.T) {
	page := sharedtest.Path(t, "cases", "18-stuck-engine-not-load.prom")
	d := decideOK(t, page, "--target", "4")
	wantDecision(t, d, 1, "no-data")
	_, out, _ := runDecide(t, page, "--target", "4")
	if !strings.Contains(out, "not voting: "+page+" looks like a stuck engine (waiting 6") {
		t.Errorf("text output must say the page does not vote:\n%s", out)
	}
}

// TestDecideStuckEngineOfSeveral: a data-parallel page whose engine 1
// waits 6 with nothing running and an empty KV cache while engine 0 runs 7
// and waits 2, beside vllm-running2-waiting10.prom; queue target 4,
// current 2. The page does not vote (a replica with a stuck engine): queue
// 2 + 10 = 12 over 1 reporting, 1 missing counted at 0 on a scale-up:
// 12 / 4 / 2 = 1.5, ceil(1.5 x 2) = 3. Counted as load it was queue
// 12 + 7 + 8 = 27, ceil(27 / 4) = 7, rate-limited to 6.
func TestDecideStuckEngineOfSeveral(t *testing.T) {
	dp := filepath.Join(t.TempDir(), "dp.prom")
	page := `vllm:num_requests_running{engine="0",model_name="m"} 7
vllm:num_requests_running{engine="1",model_name="m"} 0
vllm:num_requests_waiting{engine="0",model_name="m"} 2
vllm:num_requests_waiting{engine="1",model_name="m"} 6
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.5
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 0
`
	if err := os.WriteFile(dp, []byte(page), 0o644); err != nil {
		t.Fatal(err)
	}
	args := []string{dp, "testdata/vllm-running2-waiting10.prom", "--target", "4"}
	d := decideOK(t, args...)
	wantDecision(t, d, 3, "DesiredWithinRange")
	if q := d.Raw["queue"].Value; q == nil || *q != 12 {
		t.Errorf("queue %v, want 12 (the replica with a stuck engine left out)", q)
	}
	_, out, _ := runDecide(t, args...)
	want := "not voting: " + dp + ` looks like a stuck engine (its engine {engine="1"} waits with nothing running and an empty KV cache, beside engines running 7): not counted as load, a missing replica`
	if !strings.Contains(out, want) {
		t.Errorf("text output lacks %q:\n%s", want, out)
	}
}
