package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/replica"
	"github.com/infscale/infscale/pkg/synthweek"
	"github.com/infscale/infscale/pkg/synthweek/synthweektest"
)

// TestSimulateWarnsUnmeetableSLO: an SLO below the TTFT any request has
// alone on an idle replica is missed by every request, and optimal (the
// cheapest schedule with the fewest misses) then runs no replica; simulate
// said nothing of why. The reference replica prefills 24,750 tokens/s with
// no request overhead (`infscale gpu`), so the trace's shortest prompt, 100
// tokens, has its first token 100 / 24750 = 4.04 ms after arriving on an
// idle replica: --slo-ttft 1ms is warned of, on stderr and as a note under
// the table, naming that TTFT and the flags to change; 5ms is not.
func TestSimulateWarnsUnmeetableSLO(t *testing.T) {
	tr := filepath.Join(t.TempDir(), "short.csv")
	if err := os.WriteFile(tr, []byte("0,100,10\n1.5,400,10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "short.csv: no request can meet the SLO TTFT of 0.001s: the least TTFT a request has on an idle replica is 0.00404s (its shortest prompt, 100 tokens, alone); every policy misses every request (optimal, the cheapest schedule with the fewest misses, runs no replica). Raise --slo-ttft above 0.00404s, or replay a faster replica (--gpu, --tp)"
	simulateWarns(t, []string{"simulate", "--trace", tr, "-p", "optimal", "-q"}, "1ms", "5ms", want)
}

// simulateWarns runs simulate's args with --slo-ttft below (want: the
// warning on stderr and as a note under the table) and above (no warning
// anywhere) the least TTFT a request has.
func simulateWarns(t *testing.T, args []string, below, above, want string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(context.Background(), append(args, "--slo-ttft", below), nil, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "warning: "+want+"\n") {
		t.Errorf("stderr %q\nwant the warning %q", errb.String(), want)
	}
	if !strings.Contains(out.String(), "\nnote: "+want+"\n") {
		t.Errorf("stdout %q\nwant the note %q", out.String(), want)
	}
	out.Reset()
	errb.Reset()
	if code := run(context.Background(), append(args, "--slo-ttft", above), nil, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if s := out.String() + errb.String(); strings.Contains(s, "no request can meet") {
		t.Errorf("--slo-ttft %s, above the least TTFT: output %q\nwant no warning", above, s)
	}
}

// TestTuneWarnsUnmeetableSLO: tune judges the same SLO through its
// replays, and said nothing while every finalist showed 100% misses: it
// warns on stderr as simulate does, once, after the search (its text has
// no notes, its JSON no warnings). Every prompt is 100 tokens or more, so
// the least TTFT is 100 / 24750 = 4.04 ms: 1ms is warned of, 5ms is not.
func TestTuneWarnsUnmeetableSLO(t *testing.T) {
	tr := writeTrace(t, "short.csv", 1200, 100)
	want := "short.csv: no request can meet the SLO TTFT of 0.001s: the least TTFT a request has on an idle replica is 0.00404s (its shortest prompt, 100 tokens, alone); every policy misses every request (optimal, the cheapest schedule with the fewest misses, runs no replica). Raise --slo-ttft above 0.00404s, or replay a faster replica (--gpu, --tp)"
	tuneWarns(t, []string{"tune", "--trace", tr, "--stress", "none", "--workers", "1", "-q"}, "1ms", "5ms", want)
}

// TestTunePDWarnsUnmeetableSLO: tune --pd warns of the pair's least TTFT
// in the pair's words, as simulate --pd does (it said "on an idle
// replica" and "optimal ... runs no replica", the one-pool wording, of a
// pair whose optimal keeps a decode replica). Every prompt is 4000 tokens
// or more: 4000 / 24750 = 161.6 ms of prefill, 4000 × 131072 / 25e9 =
// 20.97 ms of KV transfer and the decode step of it alone (the replica
// model's StepTime(1, 4000), about 7 ms): 150ms is warned of, 250ms is
// not.
func TestTunePDWarnsUnmeetableSLO(t *testing.T) {
	tr := writeTrace(t, "long.csv", 1200, 4000)
	m, err := replica.New(replica.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	least := 4000.0/24750 + 4000*131072/25e9 + m.StepTime(1, 4000)
	want := fmt.Sprintf("long.csv: no request can meet the SLO TTFT of 0.15s: the least TTFT a request has through idle prefill and decode pools is %.4gs (its shortest prompt, 4000 tokens, alone); every policy misses every request. Raise --slo-ttft above %.4gs, or replay a faster replica (--gpu, --tp)", least, least)
	tuneWarns(t, []string{"tune", "--pd", "--trace", tr, "--stress", "none", "--workers", "1", "-q"}, "150ms", "250ms", want)
}

// writeTrace writes a trace file of n requests a second apart, prompts
// from shortest to shortest+299 tokens, 10 output tokens each, and
// returns its path.
func writeTrace(t *testing.T, name string, n, shortest int) string {
	t.Helper()
	var rows strings.Builder
	for i := range n {
		fmt.Fprintf(&rows, "%d,%d,10\n", i, shortest+i%300)
	}
	tr := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(tr, []byte(rows.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return tr
}

// tuneWarns runs tune's args with --slo-ttft below (want: the warning on
// stderr, once, after the search) and above (no warning) the least TTFT a
// request has.
func tuneWarns(t *testing.T, args []string, below, above, want string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := run(context.Background(), append(args, "--slo-ttft", below), nil, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if n := strings.Count(errb.String(), "warning: "+want+"\n"); n != 1 {
		t.Errorf("stderr %q\nwant the warning once, got %d: %q", errb.String(), n, want)
	}
	out.Reset()
	errb.Reset()
	if code := run(context.Background(), append(args, "--slo-ttft", above), nil, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if strings.Contains(errb.String(), "no request can meet") {
		t.Errorf("--slo-ttft %s, above the least TTFT: stderr %q\nwant no warning", above, errb.String())
	}
}

// TestSimulatePDWarnsUnmeetableSLO: on a pair the least TTFT is the whole
// path's with both pools idle. A 4000-token prompt prefills in 4000 /
// 24750 = 161.6 ms and its KV (128 KiB a token) crosses 25 GB/s in 4000
// × 131072 / 25e9 = 20.97 ms, 182.6 ms before its first decode step (the
// replica model's StepTime(1, 4000), about 7 ms): --slo-ttft 150ms (above
// the 72 ms the pair needs to replay at all, ErrPDSLO) is warned of, on
// stderr and under the table, as simulate warns; 250ms is not.
func TestSimulatePDWarnsUnmeetableSLO(t *testing.T) {
	tr := filepath.Join(t.TempDir(), "long.csv")
	if err := os.WriteFile(tr, []byte("0,4000,10\n1.5,5000,10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := replica.New(replica.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	least := 4000.0/24750 + 4000*131072/25e9 + m.StepTime(1, 4000)
	want := fmt.Sprintf("long.csv: no request can meet the SLO TTFT of 0.15s: the least TTFT a request has through idle prefill and decode pools is %.4gs (its shortest prompt, 4000 tokens, alone); every policy misses every request. Raise --slo-ttft above %.4gs, or replay a faster replica (--gpu, --tp)", least, least)
	simulateWarns(t, []string{"simulate", "--pd", "--trace", tr, "-p", "pd(fixed:1;fixed:1)", "-q"}, "150ms", "250ms", want)
}

// TestBacktestWarnsUnmeetableSLO: backtest replays a history's requests,
// their prompts drawn uniformly within the prompt-token histogram's
// buckets from 1 token (synth-week's lowest bucket, (0, 128], holds 15% of
// some 68,000 requests an hour, so 1-token prompts are among them): the
// least TTFT is 1 / 24750 = 40.4 us, and --slo-ttft 10us is warned of on
// stderr, in the report's warning lines and in --output json's warnings
// (50us is not); profile, replaying the same requests, says it on stderr
// once.
func TestBacktestWarnsUnmeetableSLO(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled history")
	}
	srv, truth := synthweektest.Serve(t, synthweek.Config{Days: 1, Scrape: 2 * time.Minute})
	start := truth.Start.Add(12 * time.Hour)
	args := []string{"backtest", "--prometheus-url", srv.URL, "--selector", `{namespace="llm"}`, "-p", "queue:24", "-q",
		"--start", fmt.Sprint(start.Unix()), "--end", fmt.Sprint(start.Add(2 * time.Hour).Unix()), "--step", "2m"}
	want := "no request can meet the SLO TTFT of 1e-05s: the least TTFT a request has on an idle replica is 4.04e-05s (its shortest prompt, 1 token, alone); every policy misses every request (optimal, the cheapest schedule with the fewest misses, runs no replica). Raise --slo-ttft above 4.04e-05s, or replay a faster replica (--gpu, --tp)"
	backtestWarns(t, args, "10us", "50us", want)
	// profile replays the day's requests under the same SLO: once on stderr.
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"profile", "--prometheus-url", srv.URL, "--selector", `{namespace="llm"}`, "--slo-ttft", "10us",
		"--start", fmt.Sprint(truth.Start.Unix()), "--end", fmt.Sprint(truth.Start.Add(24 * time.Hour).Unix()), "--step", "2m"}, nil, &out, &errb); code != exitOK {
		t.Fatalf("profile: exit %d: %s", code, errb.String())
	}
	if n := strings.Count(errb.String(), want+"\n"); n != 1 {
		t.Errorf("profile: stderr %q\nwant the warning once, got %d: %q", errb.String(), n, want)
	}
}

// TestBacktestPairWarnsUnmeetableSLO: a P/D backtest on a history of
// 1000-token prompts (pairHistory: a prompt counter alone, so every prompt
// is its mean) with the KV over NVLink (450 GB/s on h100-sxm) replays
// above the allowance the prefill pool leaves (ErrPDSLO: an 8192-token
// prompt's KV, 8192 × 131072 / 450e9 = 2.39 ms, and a full decode step,
// 16 GB / 2.345 TB/s = 6.823 ms of weights plus 396,728 tokens × 131072 B
// / 2.345 TB/s = 22.18 ms of KV: 31.4 ms), while every request needs
// 1000 / 24750 = 40.40 ms of prefill, 1000 × 131072 / 450e9 = 0.29 ms of
// transfer and a decode step of it alone, 6.823 + 0.056 ms: 47.57 ms.
// --slo-ttft 40ms, between the two, is warned of through idle pools on
// stderr, as a warning line and in JSON's warnings; 60ms is not.
func TestBacktestPairWarnsUnmeetableSLO(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled history")
	}
	first := time.Now().UTC().Add(-5 * time.Hour).Truncate(time.Hour)
	cfg := pairConfig(t, pairHistory(t, first), `{namespace="llm",pod=~"chat-decode-.*"}`)
	args := []string{"backtest", "--config", cfg, "--target", "chat", "-q", "-p", "pd(fixed:1;fixed:1)", "--kv-link", "nvlink",
		"--start", fmt.Sprint(first.Unix()), "--end", fmt.Sprint(first.Add(2 * time.Hour).Unix()), "--step", "1m"}
	want := "no request can meet the SLO TTFT of 0.04s: the least TTFT a request has through idle prefill and decode pools is 0.04757s (its shortest prompt, 1000 tokens, alone); every policy misses every request. Raise --slo-ttft above 0.04757s, or replay a faster replica (--gpu, --tp)"
	backtestWarns(t, args, "40ms", "60ms", want)
}

// backtestWarns runs backtest's args (on a Prometheus history, whose
// replays are named "prometheus START..END") with --slo-ttft below (want,
// after that name: the warning on stderr, as a warning line under the
// table and among --output json's warnings) and above (no warning
// anywhere) the least TTFT a request has.
func backtestWarns(t *testing.T, args []string, below, above, want string) {
	t.Helper()
	slo := func(d string, more ...string) []string { return slices.Concat(args, []string{"--slo-ttft", d}, more) }
	var out, errb bytes.Buffer
	if code := run(context.Background(), slo(below), nil, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), want+"\n") || !strings.Contains(errb.String(), "warning: prometheus ") {
		t.Errorf("stderr %q\nwant the warning %q", errb.String(), want)
	}
	if !strings.Contains(out.String(), "\nwarning   prometheus ") || !strings.Contains(out.String(), want+"\n") {
		t.Errorf("stdout %q\nwant the warning line %q", out.String(), want)
	}
	out.Reset()
	errb.Reset()
	if code := run(context.Background(), slo(below, "--output", "json"), nil, &out, &errb); code != exitOK {
		t.Fatalf("json: exit %d: %s", code, errb.String())
	}
	var rep struct {
		Warnings []string `json:"warnings"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(rep.Warnings, func(w string) bool { return strings.HasSuffix(w, ": "+want) }) {
		t.Errorf("JSON warnings %q\nwant %q", rep.Warnings, want)
	}
	out.Reset()
	errb.Reset()
	if code := run(context.Background(), slo(above), nil, &out, &errb); code != exitOK {
		t.Fatalf("--slo-ttft %s: exit %d: %s", above, code, errb.String())
	}
	if s := out.String() + errb.String(); strings.Contains(s, "no request can meet") {
		t.Errorf("--slo-ttft %s, above the least TTFT: output %q\nwant no warning", above, s)
	}
}
