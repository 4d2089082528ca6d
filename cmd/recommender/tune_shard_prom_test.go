package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/internal/promtest"
	"github.com/infscale/infscale/pkg/replay"
	"github.com/infscale/infscale/pkg/synthweek"
	"github.com/infscale/infscale/pkg/synthweek/synthweektest"
	"github.com/infscale/infscale/pkg/tune"
)

// TestTuneShardOnPrometheus: `infscale tune --config FILE --shard 1/2 --out
// DIR` on a real Prometheus holding a synthetic day (pkg/synthweek) that
// ends now. The config has two targets with a tune: block reading DIR (as
// the chart's CronJob and serve share it); the second
// (chat-b, index 1) is shard 1's, the first is not tuned. chat-b is tuned
// on its tune.history, the last hour, and DIR/chat-b.json is what serve's
// tune: block reads (tune.ReadResult): the target, the history's span
// (3600 s) ending at the run's start (to the step), a policy `simulate --policy` parses,
// figures from replays; the JSON output names the same file and policy.
// serveLastDay serves a synthetic day (synthweektest) that ends a minute
// from now, from the pinned Prometheus: the last hour, the last day and a
// tune: block's history all fall in it.
func serveLastDay(t *testing.T) *promtest.Server {
	t.Helper()
	start := time.Now().UTC().Truncate(time.Minute).Add(-24*time.Hour + time.Minute)
	srv, _ := synthweektest.Serve(t, synthweek.Config{Start: start, Days: 1})
	return srv
}

func TestTuneShardOnPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled day and tunes on an hour of it")
	}
	srv := serveLastDay(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "results")
	if err := os.Mkdir(out, 0o755); err != nil {
		t.Fatal(err)
	}
	target := func(name string) string {
		return fmt.Sprintf(`- name: %s
  server: vllm
  selector: '{namespace="llm"}'
  replicas: 'sum(kube_deployment_spec_replicas{namespace="llm",deployment="chat"})'
  metrics: [{type: queue, target: 24}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  maxReplicaCount: 20
  tune: {every: 1h, history: 1h, max_miss: 0.01, mode: shadow, dir: %q}
`, name, out)
	}
	cfg := filepath.Join(dir, "serve.yaml")
	if err := os.WriteFile(cfg, []byte("prometheus: {url: "+srv.URL+"}\npollingInterval: 15s\ntargets:\n"+target("chat")+target("chat-b")), 0o644); err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"tune", "--config", cfg, "--shard", "1/2", "--out", out, "--workers", "2", "--output", "json", "--quiet"}, nil, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, stderr.String())
	}
	var got struct {
		Shard   string `json:"shard"`
		Targets []struct {
			Target, Path, Error string
			Result              *tune.TargetResult
		} `json:"targets"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		t.Fatalf("%v in %s", err, stdout.String())
	}
	if got.Shard != "1/2" || len(got.Targets) != 1 || got.Targets[0].Target != "chat-b" || got.Targets[0].Error != "" || got.Targets[0].Result == nil {
		t.Fatalf("output %s, want shard 1/2 with chat-b tuned", stdout.String())
	}
	if _, err := os.Stat(filepath.Join(out, "chat.json")); !os.IsNotExist(err) {
		t.Errorf("chat.json: %v, want none (target 0 is shard 0's)", err)
	}
	r, ok, err := tune.ReadResult(out, "chat-b")
	if err != nil || !ok {
		t.Fatalf("ReadResult: %v %v, want chat-b's result", ok, err)
	}
	if want := tune.ResultPath(out, "chat-b"); got.Targets[0].Path != want {
		t.Errorf("path %q, want %q", got.Targets[0].Path, want)
	}
	if r.Target != "chat-b" || r.History != 3600 || r.At.Before(before.Add(-time.Minute)) || r.At.After(time.Now()) {
		t.Errorf("result target %q history %g s at %v, want chat-b, 3600 s, ending within a reconstruction step of the run (%v..now)", r.Target, r.History, r.At, before)
	}
	if _, err := replay.ParsePolicy(r.Policy); err != nil || r.Policy != got.Targets[0].Result.Policy {
		t.Errorf("policy %q (%v), output's %q: want one policy simulate parses", r.Policy, err, got.Targets[0].Result.Policy)
	}
	if r.Replays == 0 || !(r.InSample.ReplicaMinutes > 0) || !(r.OutOfSample.ReplicaMinutes > 0) {
		t.Errorf("replays %d, in-sample %+v, out of sample %+v: want figures from replays", r.Replays, r.InSample, r.OutOfSample)
	}
	t.Logf("chat-b: %s (holds %v; in %.2f%% / %.1f replica-minutes, out %.2f%% / %.1f; %d replays, %.1f CPU-s)", r.Policy, r.Holds,
		r.InSample.MissPct, r.InSample.ReplicaMinutes, r.OutOfSample.MissPct, r.OutOfSample.ReplicaMinutes, r.Replays, r.CPUSeconds)
	if strings.Contains(stderr.String(), "warning") {
		t.Errorf("stderr %q", stderr.String())
	}

	// Without --quiet, on a redirected stderr, shard 0/2 (chat) shows its
	// progress as tune on a trace does: plain lines of the target's
	// replays done, never going back, the last 100%. chat asks for 2d of
	// history here, of which the day's data covers 1d: the line on stdout
	// says both (a Prometheus keeping less than tune.history was silent).
	cfg2 := filepath.Join(dir, "serve2.yaml")
	b, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(cfg2, []byte(strings.Replace(string(b), "history: 1h", "history: 2d", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	stdout.Reset()
	code = run(context.Background(), []string{"tune", "--config", cfg2, "--shard", "0/2", "--out", out, "--workers", "2"}, strings.NewReader(""), &stdout, f)
	b, err = os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	errs := string(b)
	if code != exitOK {
		t.Fatalf("shard 0/2: exit %d, stderr %s", code, errs)
	}
	// The day's data starts 24 h less a minute before the run's minute;
	// the grid ends at its last 30 s step before the run: 23h59m or, to
	// the minute, 1d.
	if !regexp.MustCompile(`; (1d|23h59m) of history \(2d asked\), `).MatchString(stdout.String()) {
		t.Errorf("shard 0/2 stdout %q: want the day of history the data covers, of the 2d asked", stdout.String())
	}
	prev := -1
	lines := strings.Split(strings.TrimSuffix(errs, "\n"), "\n")
	for _, l := range lines {
		pc, ok := strings.CutPrefix(l, "tune: chat: replays: ")
		n, err := strconv.Atoi(strings.TrimSuffix(pc, "%"))
		if !ok || err != nil || !strings.HasSuffix(pc, "%") || n < prev || n > 100 {
			t.Fatalf("shard 0/2 stderr line %q after %d%%: want \"tune: chat: replays: N%%\", N non-decreasing up to 100:\n%s", l, prev, errs)
		}
		prev = n
	}
	if len(lines) < 2 || prev != 100 {
		t.Errorf("shard 0/2 progress %q: want several lines, the last at 100%%", lines)
	}
}

// TestTuneShardSkipsNewTarget: a target whose series began 30 minutes
// ago (a synthetic day whose first scrape is then) asks for 7d of history
// and has half an hour, under the hour a run needs: the shard reports it
// skipped, saying how much data there is, writes no file and exits 0 (a
// new target is no failure: exit 1 failed the CronJob's pod, and its
// backoffLimit reran the whole shard).
func TestTuneShardSkipsNewTarget(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled day")
	}
	start := time.Now().UTC().Truncate(time.Minute).Add(-30 * time.Minute)
	srv, _ := synthweektest.Serve(t, synthweek.Config{Start: start, Days: 1})
	dir := t.TempDir()
	cfg := filepath.Join(dir, "serve.yaml")
	if err := os.WriteFile(cfg, []byte(`prometheus: {url: `+srv.URL+`}
targets:
- name: fresh
  selector: '{namespace="llm"}'
  metrics: [{type: queue, target: 24}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  maxReplicaCount: 20
  tune: {history: 7d}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"tune", "--config", cfg, "--shard", "0/1", "--out", dir, "--quiet"}, nil, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d, want 0; stdout %s stderr %s", code, stdout.String(), stderr.String())
	}
	// 30 minutes of data, a minute more or less as the clock turns
	// between the backfill and the run.
	out := stdout.String()
	if !strings.HasPrefix(out, "fresh: skipped: target fresh: history: too little history to tune on: the data covers ") ||
		!strings.Contains(out, " of the 1w asked; at least 1h is needed") ||
		!(strings.Contains(out, "covers 29m") || strings.Contains(out, "covers 30m") || strings.Contains(out, "covers 31m")) {
		t.Errorf("stdout %q: want fresh skipped with its 30 minutes of data", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "fresh.json")); !os.IsNotExist(err) {
		t.Errorf("fresh.json: %v, want none", err)
	}
}

// TestTuneShardSkipsGappedHistory: a target whose last hour holds the
// synthetic week's 20-minute scrape gap, 25 to 5 minutes before the run,
// has 10 of its held-out quarter's 15 minutes without a sample, over half:
// the shard reports it skipped (tuned again once the gap has left the
// span), writes no file and exits 0, as for a new target: exit 1 would
// have the CronJob retry the shard for nothing.
func TestTuneShardSkipsGappedHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled week")
	}
	// The week's gap is 4 days 16 hours after its start.
	start := time.Now().UTC().Truncate(time.Minute).Add(-(4*24*time.Hour + 16*time.Hour + 25*time.Minute))
	srv, tr := synthweektest.Serve(t, synthweek.Config{Start: start, Days: 5})
	// Backfilling the week takes a minute or more on a loaded machine; the
	// gap holds over half the held-out quarter until it ends 7.5 minutes ago.
	if d := time.Until(tr.Gap[1]); d > -4*time.Minute || d < -7*time.Minute {
		t.Fatalf("the gap ends %s from now, want 5 to 7 minutes ago (backfill too slow?)", d)
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "serve.yaml")
	if err := os.WriteFile(cfg, []byte(`prometheus: {url: `+srv.URL+`}
targets:
- name: chat
  selector: '{namespace="llm"}'
  metrics: [{type: queue, target: 24}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  maxReplicaCount: 20
  tune: {every: 1h, history: 1h, dir: `+dir+`}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), []string{"tune", "--config", cfg, "--shard", "0/1", "--quiet"}, nil, &stdout, &stderr)
	if code != exitOK {
		t.Fatalf("exit %d, want 0; stdout %s stderr %s", code, stdout.String(), stderr.String())
	}
	if out := stdout.String(); !strings.HasPrefix(out, "chat: skipped: target chat: history: too much of the history is gaps: the held-out part") {
		t.Errorf("stdout %q: want chat skipped for the gap in its held-out part", out)
	}
	if _, err := os.Stat(filepath.Join(dir, "chat.json")); !os.IsNotExist(err) {
		t.Errorf("chat.json: %v, want none", err)
	}
}
