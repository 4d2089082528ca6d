package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/replica"
	"github.com/infscale/infscale/pkg/synthweek"
	"github.com/infscale/infscale/pkg/synthweek/synthweektest"
)

func TestBacktestBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"backtest"}, "give --config FILE --target NAME, or --prometheus-url"},
		{[]string{"backtest", "--prometheus-url", "http://127.0.0.1:1"}, "needs --selector"},
		// As prometheus.url in a config: the base URL (the client adds /api/v1/query).
		{[]string{"backtest", "--prometheus-url", "http://127.0.0.1:1/api/v1/", "--selector", `{namespace="llm"}`}, "--prometheus-url http://127.0.0.1:1/api/v1/: the base URL without /api/v1 (the client adds /api/v1/query), e.g. http://prometheus:9090"},
		{[]string{"profile", "--prometheus-url", "http://127.0.0.1:1/prom/api/v1", "--selector", `{namespace="llm"}`}, "--prometheus-url http://127.0.0.1:1/prom/api/v1: the base URL without /api/v1"},
		{[]string{"backtest", "--prometheus-url", "http://127.0.0.1:1", "--selector", "{namespace="}, "--selector"},
		{[]string{"backtest", "--prometheus-url", "http://127.0.0.1:1", "--selector", `{namespace="llm"}`, "--start", "yesterday"}, "--start"},
		{[]string{"backtest", "--prometheus-url", "http://127.0.0.1:1", "--selector", `{namespace="llm"}`, "--start", "now", "--end=-1h"}, "is not before"},
		{[]string{"backtest", "--prometheus-url", "http://127.0.0.1:1", "--selector", `{namespace="llm"}`, "--policy", "queue:zero"}, "--policy #1"},
		{[]string{"backtest", "--prometheus-url", "http://127.0.0.1:1", "--selector", `{namespace="llm"}`, "--replicas-query", "sum("}, "--replicas-query"},
		{[]string{"backtest", "--config", "x.yaml", "--prometheus-url", "http://127.0.0.1:1"}, "not both"},
		// Without --calibrate it was ignored, whatever it said (0s too).
		{[]string{"backtest", "--prometheus-url", "http://127.0.0.1:1", "--selector", `{namespace="llm"}`, "--calibrate-window", "5m"}, "--calibrate-window needs --calibrate FILE"},
		// -p as simulate's.
		{[]string{"backtest", "--prometheus-url", "http://127.0.0.1:1", "--selector", `{namespace="llm"}`, "-p", "queue:zero"}, "--policy #1"},
		{[]string{"profile", "--prometheus-url", "http://127.0.0.1:1", "--selector", `{namespace="llm"}`, "-p", "queue:zero"}, "queue:zero"},
		{[]string{"backtest", "--prometheus-url", "http://127.0.0.1:99999", "--selector", `{namespace="llm"}`}, "--prometheus-url http://127.0.0.1:99999: port 99999: want 1 to 65535"},
		{[]string{"tune", "--prometheus-url", "http://127.0.0.1:0", "--selector", `{namespace="llm"}`}, "port 0: want 1 to 65535"},
		// Echoed as typed, not URL-escaped; a password is not echoed.
		{[]string{"backtest", "--prometheus-url", "not a url", "--selector", `{namespace="llm"}`}, "--prometheus-url not a url: want http://"},
		{[]string{"backtest", "--prometheus-url", "ftp://me:secret@host", "--selector", `{namespace="llm"}`}, "--prometheus-url ftp://me:xxxxx@host: want"},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), c.args, nil, &out, &errb)
		if code != exitInvalid || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 mentioning %q", c.args[1:], code, errb.String(), c.want)
		}
	}
}

// TestBacktestUnreachable: a Prometheus that cannot be reached is a runtime
// failure (exit 1), not invalid input and not an empty history.
func TestBacktestUnreachable(t *testing.T) {
	var out, errb bytes.Buffer
	args := []string{"backtest", "--prometheus-url", "http://127.0.0.1:1", "--selector", `{namespace="llm"}`, "--query-timeout", "2s"}
	if code := run(context.Background(), args, nil, &out, &errb); code != exitRuntime || !strings.Contains(errb.String(), "backtest:") {
		t.Errorf("exit %d, stderr %q; want exit 1", code, errb.String())
	}
}

func TestParseTime(t *testing.T) {
	now := time.Date(2026, 1, 12, 0, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"now":                  now,
		"-7d":                  now.Add(-7 * 24 * time.Hour),
		"-36h":                 now.Add(-36 * time.Hour),
		"1767571200":           time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC), // 2026-01-05 = 20458 days × 86400
		"2026-01-05T00:00:00Z": time.Date(2026, 1, 5, 0, 0, 0, 0, time.UTC),
	} {
		got, err := parseTime(in, now)
		if err != nil || !got.Equal(want) {
			t.Errorf("parseTime(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
}

// TestCommandsOnSynthWeek runs backtest and profile against the synthetic
// week (pkg/synthweek) loaded by promtool and served by a real
// Prometheus, read only through its HTTP API.
func TestCommandsOnSynthWeek(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled week")
	}
	srv, truth := synthweektest.Serve(t, synthweek.Config{Scrape: 2 * time.Minute})
	t.Run("backtest", func(t *testing.T) { testBacktest(t, srv.URL, truth) })
	t.Run("profile", func(t *testing.T) { testProfile(t, srv.URL, truth) })
	t.Run("config", func(t *testing.T) { testBacktestConfig(t, srv.URL, truth) })
	t.Run("tune", func(t *testing.T) { testTuneHistory(t, srv.URL, truth) })
	t.Run("calibrate", func(t *testing.T) { testCalibrateHistory(t, srv.URL, truth) })
}

// testCalibrateHistory: the week's latency histograms follow
// synthweek.WeekReplica, so backtest --calibrate on it (windows of two 2 m
// scrapes) fits that replica back: docs/evaluation/ACCURACY.md's tolerances for the
// Prometheus-history fit with noise (0.25 ms, 10 us, 3 ms, MFU 0.01).
func testCalibrateHistory(t *testing.T, url string, truth synthweek.Truth) {
	path := filepath.Join(t.TempDir(), "chat.json")
	day := truth.Start.Add(24 * time.Hour)
	args := []string{"backtest", "--prometheus-url", url, "--selector", `{namespace="llm"}`,
		"--start", fmt.Sprint(day.Unix()), "--end", fmt.Sprint(day.Add(48 * time.Hour).Unix()), "--step", "2m",
		"--calibrate-window", "4m", "--policy", "fixed:2", "--calibrate", path}
	var out, errb bytes.Buffer
	if code := run(context.Background(), args, nil, &out, &errb); code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	cal, err := replica.LoadCalibration(path)
	if err != nil {
		t.Fatal(err)
	}
	synthweektest.CheckWeekCalibration(t, cal)
}

// testBacktestConfig reads the Prometheus, selector and replicas query from
// a serve config and replays the target's own policy as config:chat.
func testBacktestConfig(t *testing.T, url string, truth synthweek.Truth) {
	cfg := filepath.Join(t.TempDir(), "serve.yaml")
	yaml := "prometheus:\n  url: " + url + "\ntargets:\n- name: chat\n  server: vllm\n  selector: '{namespace=\"llm\"}'\n" +
		"  replicas: 'kube_deployment_spec_replicas{namespace=\"llm\",deployment=\"chat\"}'\n" +
		"  metrics:\n  - {type: queue, target: 24}\n  min: 1\n  max: 8\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	day := truth.Start.Add(5 * 24 * time.Hour) // Saturday
	args := []string{"backtest", "--config", cfg, "--target", "chat",
		"--start", fmt.Sprint(day.Unix()), "--end", fmt.Sprint(day.Add(6 * time.Hour).Unix()), "--step", "2m",
		"--policy", "fixed:2", "--output", "csv"}
	var out, errb bytes.Buffer
	if code := run(context.Background(), args, nil, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	// Rows: header, actual (observed), actual (simulated), config:chat, fixed:2.
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[3], "config:chat,") || !strings.HasPrefix(lines[4], "fixed:2,") {
		t.Errorf("csv:\n%s\nwant the actual rows, config:chat and fixed:2", out.String())
	}
	// fixed:2 for 6 h: 720 replica-minutes (column 7).
	if f := strings.Split(lines[4], ","); len(f) < 7 || f[6] != "720" {
		t.Errorf("fixed:2 row %q, want 720 replica-minutes", lines[4])
	}
	args = []string{"backtest", "--config", cfg, "--target", "nope"}
	if code := run(context.Background(), args, nil, &out, &errb); code != exitInvalid || !strings.Contains(errb.String(), "targets: chat") {
		t.Errorf("unknown target: exit %d, %s", code, errb.String())
	}

	// The target's replica: is the replay's replica where the flags do not
	// say: fixed:2 for 6 h on 4-GPU replicas is 2 x 6 x 4 = 48 GPU-hours;
	// --tp 8 wins over the file's tp: 96.
	yaml += "  replica: {gpu: h100-sxm, model: llama-3.1-70b, tp: 4}\n"
	if err := os.WriteFile(cfg, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		flags []string
		want  float64
	}{{nil, 48}, {[]string{"--tp", "8"}, 96}} {
		args := append([]string{"backtest", "--config", cfg, "--target", "chat",
			"--start", fmt.Sprint(day.Unix()), "--end", fmt.Sprint(day.Add(6 * time.Hour).Unix()), "--step", "2m",
			"--policy", "fixed:2", "--output", "json"}, c.flags...)
		out.Reset()
		errb.Reset()
		if code := run(context.Background(), args, nil, &out, &errb); code != exitOK {
			t.Fatalf("%v: exit %d: %s", c.flags, code, errb.String())
		}
		var rep struct {
			Policies []struct {
				Policy   string   `json:"policy"`
				GPUHours *float64 `json:"gpu_hours"`
			} `json:"policies"`
		}
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
			t.Fatal(err)
		}
		found := false
		for _, p := range rep.Policies {
			if p.Policy == "fixed:2" {
				found = true
				if p.GPUHours == nil || math.Abs(*p.GPUHours-c.want) > 1e-9 {
					t.Errorf("%v: fixed:2 GPU-hours %v, want %v", c.flags, p.GPUHours, c.want)
				}
			}
		}
		if !found {
			t.Errorf("%v: no fixed:2 row:\n%s", c.flags, out.String())
		}
	}
}

// testBacktest runs the command on one day of the synthetic week (Friday,
// with the scrape gap).
func testBacktest(t *testing.T, url string, truth synthweek.Truth) {
	day := truth.Start.Add(4 * 24 * time.Hour)
	args := []string{"backtest", "--prometheus-url", url, "--selector", `{namespace="llm"}`,
		"--replicas-query", `sum(kube_deployment_spec_replicas{namespace="llm",deployment="chat"})`,
		"--start", fmt.Sprint(day.Unix()), "--end", day.Add(24 * time.Hour).Format(time.RFC3339), "--step", "1m",
		"--policy", "queue:24", "--policy", "fixed:6", "--output", "json"}
	var out, errb bytes.Buffer
	if code := run(context.Background(), args, nil, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rep struct {
		Requests float64 `json:"requests"`
		Coverage struct {
			Fraction float64 `json:"fraction"`
			Gaps     []struct {
				From, To time.Time
			} `json:"gaps"`
		} `json:"coverage"`
		Actual struct {
			ReplicaMinutes float64 `json:"replica_minutes"`
			Simulated      *struct {
				Requests int64 `json:"requests"`
			} `json:"simulated"`
		} `json:"actual"`
		Policies []struct {
			Policy         string  `json:"policy"`
			Requests       int64   `json:"requests"`
			ReplicaMinutes float64 `json:"replica_minutes"`
			SavingsPct     float64 `json:"savings_pct"`
		} `json:"policies"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	t.Logf("%s", out.String())
	// fixed:6 for 24 h is 6 × 1440 = 8640 replica-minutes.
	if len(rep.Policies) != 2 || math.Abs(rep.Policies[1].ReplicaMinutes-8640) > 1 {
		t.Errorf("policies %+v, want queue:24 and fixed:6 with 8640 replica-minutes", rep.Policies)
	}
	// The replay sees the reconstructed requests, rounded.
	if math.Abs(float64(rep.Policies[0].Requests)-rep.Requests) > 1 {
		t.Errorf("replayed %d requests, reconstructed %.0f", rep.Policies[0].Requests, rep.Requests)
	}
	// Savings are against the actual replica-minutes.
	want := 100 * (rep.Actual.ReplicaMinutes - 8640) / rep.Actual.ReplicaMinutes
	if math.Abs(rep.Policies[1].SavingsPct-want) > 1e-6 {
		t.Errorf("fixed:6 savings %.3f%%, want %.3f%%", rep.Policies[1].SavingsPct, want)
	}
	// One gap of about 20 minutes in 24 h: coverage about 98.6%.
	if len(rep.Coverage.Gaps) != 1 || rep.Coverage.Fraction < 0.98 || rep.Coverage.Fraction > 0.99 {
		t.Errorf("coverage %+v, want one gap and about 98.6%%", rep.Coverage)
	}
	if rep.Actual.Simulated == nil {
		t.Error("no simulated actual row")
	}

	// Text output has the actual rows and the gap; --plot writes an SVG.
	out.Reset()
	args[len(args)-1] = "text"
	svg := filepath.Join(t.TempDir(), "backtest.svg")
	args = append(args, "--plot", svg)
	if code := run(context.Background(), args, nil, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, s := range []string{"actual (observed)", "actual (simulated)", "gap", "fidelity"} {
		if !strings.Contains(out.String(), s) {
			t.Errorf("text output lacks %q:\n%s", s, out.String())
		}
	}
	if b, err := os.ReadFile(svg); err != nil || !bytes.Contains(b, []byte("<svg")) {
		t.Errorf("plot %s: %v, %d bytes", svg, err, len(b))
	}
	t.Logf("\n%s", out.String())
}

// TestQueryTimeoutBounded: --query-timeout outside 1s..1h is refused (exit
// 2) by every command reading Prometheus history; 0s disabled the timeout,
// so a hung Prometheus hung the command.
func TestQueryTimeoutBounded(t *testing.T) {
	for _, cmd := range []string{"backtest", "profile", "tune"} {
		for _, tc := range []struct{ value, want string }{
			{"0s", "--query-timeout 0s: want 1s to 1h"},
			{"-1s", "--query-timeout -1s: want 1s to 1h"},
			{"1ns", "--query-timeout 1ns: want 1s to 1h"},
			{"2h", "--query-timeout 2h: want 1s to 1h"},
		} {
			var out, errb bytes.Buffer
			args := []string{cmd, "--prometheus-url", "http://127.0.0.1:1", "--selector", `{namespace="llm"}`, "--query-timeout=" + tc.value}
			if code := run(t.Context(), args, nil, &out, &errb); code != exitInvalid || out.Len() != 0 || !strings.Contains(errb.String(), tc.want) {
				t.Errorf("%s --query-timeout %s: exit %d, stdout %q, stderr %q; want 2 and %q", cmd, tc.value, code, out.String(), errb.String(), tc.want)
			}
		}
	}
}

// TestConfigNeedsTarget: --config without --target names the file's
// targets to choose from (it said only "--config needs --target NAME"),
// for each command that reads a target's history, before any query.
func TestConfigNeedsTarget(t *testing.T) {
	cfg := filepath.Join(t.TempDir(), "two.yaml")
	if err := os.WriteFile(cfg, []byte(`prometheus: {url: "http://127.0.0.1:1"}
targets:
- {name: chat, server: vllm, selector: '{namespace="llm"}', metrics: [{type: queue, target: 24}], max: 8}
- {name: code, server: vllm, selector: '{namespace="code"}', metrics: [{type: queue, target: 24}], max: 8}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"backtest", "profile", "tune"} {
		var out, errb bytes.Buffer
		code := run(context.Background(), []string{cmd, "--config", cfg}, nil, &out, &errb)
		want := "infscale: --config " + cfg + " needs --target NAME, the target whose history to read (targets: chat, code)\n"
		if code != exitInvalid || errb.String() != want {
			t.Errorf("%s --config: exit %d, stderr %q; want 2 and %q", cmd, code, errb.String(), want)
		}
	}
}
