package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestHoldStateRoundTrip: the state decide --hold writes is read back by
// the next decide. A scale-down from 5 to 1 opens a dip (open_dip, a JSON
// object behind a pointer); the state walker read it as a scalar and
// refused the file it had just written ("data after the JSON object").
// The dip closes when the queue comes back: dips[0] returned, back 5.
func TestHoldStateRoundTrip(t *testing.T) {
	state := filepath.Join(t.TempDir(), "s.json")
	step := func(now, queue string) string {
		t.Helper()
		code, out, stderr := runIn(t, nil, "decide", "--queue", queue, "--hold", "182s", "--state", state, "--now", now, "--down-window", "0s")
		if code != exitOK {
			t.Fatalf("--now %s --queue %s: exit %d; stderr:\n%s", now, queue, code, stderr)
		}
		return out
	}
	step("1000", "40") // 40 / 4 = 10, the scale-up limit of 1 + 4: 5
	step("1015", "4")  // 4 / 4 = 1: a dip from 5, no dips seen (T* = 0): release to 1
	data, err := os.ReadFile(state)
	if err != nil || !strings.Contains(string(data), `"open_dip":{"at":"1970-01-01T00:16:55Z","from":5,"floor":1}`) {
		t.Fatalf("state after the dip: %s (%v)", data, err)
	}
	step("1030", "4")  // read back: the dip stays open
	step("1045", "40") // the dip returns at 30 s, wanting 5 back (1 + 4)
	data, _ = os.ReadFile(state)
	if !strings.Contains(string(data), `"dips":[{"at":"1970-01-01T00:16:55Z","seconds":30,"returned":true,"back":5,"from":5,"floor":1}]`) {
		t.Errorf("state after the return: %s", data)
	}
}

// TestHoldStateWrongTypes: a hand-edited dip's missed that is not a bool,
// or an open_dip that is not an object, is refused at its line:col (exit
// 2), not read out of step with the file.
func TestHoldStateWrongTypes(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, state, want string }{
		{"missed string", `"dips":[{"at":"1970-01-01T00:16:55Z","seconds":30,"returned":true,"back":5,"from":5,"floor":1,"missed":"yes"}]`, `line 1:`},
		{"missed object", `"dips":[{"at":"1970-01-01T00:16:55Z","seconds":30,"returned":true,"missed":{}}]`, `state.dips[0].missed: want true or false, got an object`},
		{"open_dip array", `"open_dip":[]`, `state.open_dip: want an object, got an array`},
		// Values decide never writes, which decided before: a dip of 1e300 s
		// held its replicas for ever, 100000 dips took seconds per decision.
		{"dip past last_at", `"dips":[{"at":"1970-01-01T00:16:55Z","seconds":1e300,"returned":true,"back":5,"from":5,"floor":1}]`, `state.dips[0].seconds: 1e+300: the dip would end after last_at`},
		{"floor above from", `"dips":[{"at":"1970-01-01T00:16:55Z","seconds":5,"returned":true,"back":5,"from":5,"floor":50}]`, `state.dips[0].floor: 50 is above from 5`},
		{"back above from", `"dips":[{"at":"1970-01-01T00:16:55Z","seconds":5,"returned":true,"back":50,"from":5,"floor":1}]`, `state.dips[0].back: 50 must be in 0..from (5)`},
		// An open dip, or a low of it, dated after the last decision: no
		// decision opened it there (its age read 1 s, holding longer).
		{"open dip after last_at", `"open_dip":{"at":"1970-01-01T00:17:30Z","from":3,"floor":1}`, `state.open_dip.at: 1970-01-01T00:17:30Z is after last_at 1970-01-01T00:17:00Z (a dip opens at a decision)`},
		{"open low after last_at", `"open_dip":{"at":"1970-01-01T00:16:55Z","from":5,"floor":1,"lows":[{"at":"1970-01-01T00:16:55Z","floor":3},{"at":"1970-01-01T00:17:30Z","floor":1}]}`, `state.open_dip.lows[1].at: 1970-01-01T00:17:30Z is after last_at 1970-01-01T00:17:00Z (a low is reached at a decision)`},
		{"open floor above from", `"open_dip":{"at":"1970-01-01T00:16:55Z","from":3,"floor":9}`, `state.open_dip.floor: 9 is above from 3`},
		// A dip opens below the output it held and its floor only falls:
		// one at its from released nothing, and read as open it kept the
		// next fall from opening a dip (replicas above from went unheld).
		{"open floor at from", `"open_dip":{"at":"1970-01-01T00:16:55Z","from":5,"floor":5}`, `state.open_dip.floor: 5 is not below from 5`},
		{"open low at from", `"open_dip":{"at":"1970-01-01T00:16:55Z","from":5,"floor":1,"lows":[{"at":"1970-01-01T00:16:55Z","floor":5},{"at":"1970-01-01T00:16:58Z","floor":1}]}`, `state.open_dip.lows[0].floor: 5: each low is below the one before and below from (5)`},
		{"65 dips", `"dips":[` + strings.TrimSuffix(strings.Repeat(`{"at":"1970-01-01T00:16:55Z","seconds":5,"returned":true,"back":5,"from":5,"floor":1},`, 65), ",") + `]`, `state.dips: 65 dips: at most 64`},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".json")
		doc := `{"version":1,"desired":1,"current":1,"state":{"last_desired":1,"last_at":"1970-01-01T00:17:00Z",` + tc.state + `},"saved_at":"1970-01-01T00:17:00Z"}`
		if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
			t.Fatal(err)
		}
		want := []string{"--state", path, tc.want}
		if tc.name == "missed string" {
			want = append(want, `state.dips[0].missed: "yes": want true or false`)
		}
		wantRefused(t, []string{"decide", "--queue", "4", "--hold", "182s", "--state", path, "--now", "2000"}, nil, want...)
	}
}

// TestHoldNeedsState: --hold without --state (decide, kube) was taken and
// did nothing, the dips it acts on living in the state; refused, exit 2.
func TestHoldNeedsState(t *testing.T) {
	wantRefused(t, []string{"decide", "--queue", "4", "--hold", "182s"}, nil, "--hold 3m2s needs --state FILE")
}

// TestParseNegativePrefixCounter: a prefix-cache counter below 0 is no
// count a server exports; refused at its line as a negative token counter
// is (exit 2), where it was reported as is (hits -5).
func TestParseNegativePrefixCounter(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct{ name, page, want string }{
		{"vllm.txt", "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running 3\n# TYPE vllm:prefix_cache_hits_total counter\nvllm:prefix_cache_hits_total -5\n",
			`vllm.txt:4: invalid metrics page: {__name__="vllm:prefix_cache_hits_total"} is -5, not a prefix-cache token counter (allowed: a number >= 0)`},
		{"sglang.txt", "# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs 3\n# TYPE sglang:cached_tokens_total counter\nsglang:cached_tokens_total -7\n",
			`sglang.txt:4: invalid metrics page: {__name__="sglang:cached_tokens_total"} is -7, not a prefix-cache token counter`},
	} {
		path := filepath.Join(dir, tc.name)
		if err := os.WriteFile(path, []byte(tc.page), 0o644); err != nil {
			t.Fatal(err)
		}
		wantRefused(t, []string{"parse", path}, nil, tc.want)
	}
}

// TestHPAHoldOutside: hold= after hpa(...) set a cost-aware hold on the
// HPA's own decision, which the HPA has not; refused as rampbound= is,
// exit 2, naming the column and where it belongs.
func TestHPAHoldOutside(t *testing.T) {
	wantRefused(t, []string{"simulate", "--policy", "hpa(demand:0.9),hold=182", "--period", "10m"}, nil,
		`--policy: policy "hpa(demand:0.9),hold=182": at column 17: hold is not an HPA option (put it inside hpa(...))`)
}

// TestRampBoundTooLarge: a ramp bound of 1e308 projected a counted trend
// to +Inf and decided the largest replica count; more than 10 standard
// errors (no RampBoundFor gives 9) is refused under the flag, the policy
// option and the config key, exit 2.
func TestRampBoundTooLarge(t *testing.T) {
	const want = "at most 10 standard errors"
	wantRefused(t, []string{"decide", "--queue", "4", "--ramp-bound", "1e308"}, nil, "--ramp-bound: 1e+308: "+want)
	wantRefused(t, []string{"simulate", "--policy", "demand:0.9,lookahead=136,rampbound=11", "--period", "10m"}, nil, "at column 36: rampbound: 11: "+want)
	cfg := filepath.Join(t.TempDir(), "serve.yaml")
	if err := os.WriteFile(cfg, []byte(`targets:
- name: chat
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat}
  maxReplicaCount: 8
  scrape: {port: 8000, path: /metrics}
  metrics: [{type: demand, target: 0.9}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  lookahead: 136s
  ramp_bound: 1e308
`), 0o644); err != nil {
		t.Fatal(err)
	}
	wantRefused(t, []string{"serve", "--check-config", "--config", cfg}, nil, cfg+":9:15: targets[0].ramp_bound: 1e+308: "+want)
}

// TestHoldBreakEvenTooLarge: a break-even of 2000000h made the hold's
// memory (ten break-evens) overflow and forget its peaks; more than a
// year, the replays' bound, is refused, exit 2.
func TestHoldBreakEvenTooLarge(t *testing.T) {
	state := filepath.Join(t.TempDir(), "s.json")
	wantRefused(t, []string{"decide", "--queue", "4", "--hold", "2000000h", "--state", state}, nil, "--hold: 2000000h0m0s: at most 8760h0m0s (a year")
}
