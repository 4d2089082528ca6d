package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/replay"
	"github.com/infscale/infscale/pkg/synthweek"
	"github.com/infscale/infscale/pkg/synthweek/synthweektest"
)

// shedLine is simulate's warning about requests shed at the replay's
// backlog bound (replay.Result.ShedWarning), lowered by the tests.
var shedLine = regexp.MustCompile(`(?m)^warning: (.+): \d+ requests were in the system \(held, waiting, running\) from t=\d+s: \d+ later arrivals \([<>]?[0-9.]+% of the trace\) were counted unserved without being queued \(the replay's memory bound\); the policy is far short of this traffic$`)

// shedWarned checks that stderr has at least one shed warning, none twice
// for a policy, and returns the policies warned of.
func shedWarned(t *testing.T, what, stderr string) []string {
	t.Helper()
	var pols []string
	seen := map[string]bool{}
	for _, m := range shedLine.FindAllStringSubmatch(stderr, -1) {
		if seen[m[1]] {
			t.Errorf("%s: %s warned of twice; want once per policy", what, m[1])
		}
		seen[m[1]] = true
		pols = append(pols, m[1])
	}
	if len(pols) == 0 {
		t.Errorf("%s: stderr %q\nwant simulate's shed warning", what, stderr)
	}
	return pols
}

// TestTuneWarnsShed: tune replays its candidates as simulate does, and a
// candidate whose backlog reached the replay's bound had its later
// requests counted unserved; simulate warns of it, tune said nothing.
// With the bound lowered to 50 and 40 requests a second (a replica serves
// about 10 of these), every floor-of-1 candidate sheds: each such policy
// is warned of once on stderr, however many parts and copies it was
// replayed on.
func TestTuneWarnsShed(t *testing.T) {
	lowerBacklog(t, 50)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"tune", "--trace", "synthetic:poisson,rate=40,duration=20m,prompt=2000,output=400,seed=1",
		"--stress", "none", "--output", "json", "--quiet"}, nil, &out, &errb)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	shedWarned(t, "tune", errb.String())
}

// TestBacktestProfileWarnShed: backtest and profile replay policies on a
// history as simulate does; with the bound lowered to 50, fixed:0 (no
// replica: every request held) sheds every request past the 50th, as
// does profile's queue:24 held to one replica at the day's peak, and each
// says so on stderr once per policy, as simulate does.
func TestBacktestProfileWarnShed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled history")
	}
	srv, truth := synthweektest.Serve(t, synthweek.Config{Days: 2, Scrape: 2 * time.Minute})
	lowerBacklog(t, 50)
	span := func(h time.Duration) []string {
		return []string{"--prometheus-url", srv.URL, "--selector", `{namespace="llm"}`,
			"--start", fmt.Sprint(truth.Start.Unix()), "--end", fmt.Sprint(truth.Start.Add(h).Unix()), "--step", "2m"}
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), append([]string{"backtest", "--policy", "fixed:0", "--policy", "queue:24"}, span(6*time.Hour)...), nil, &out, &errb); code != exitOK {
		t.Fatalf("backtest: exit %d: %s", code, errb.String())
	}
	if pols := shedWarned(t, "backtest", errb.String()); !strings.Contains(strings.Join(pols, "\n"), "fixed:0") {
		t.Errorf("backtest warned of %q; want fixed:0 among them", pols)
	}
	out.Reset()
	errb.Reset()
	if code := run(context.Background(), append([]string{"profile", "--policy", "queue:24,max=1"}, span(24*time.Hour)...), nil, &out, &errb); code != exitOK {
		t.Fatalf("profile: exit %d: %s", code, errb.String())
	}
	shedWarned(t, "profile", errb.String())
}

// TestTuneShardWarnsShed: tune --shard tunes each target as tune does,
// and warns as it does of a policy whose replays shed requests (the bound
// lowered to 5: the day's last hour, quiet as it is, keeps more than 5
// requests running on a floor of 1), each line naming the target.
func TestTuneShardWarnsShed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled day and tunes on an hour of it")
	}
	srv := serveLastDay(t)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "serve.yaml")
	if err := os.WriteFile(cfg, []byte(fmt.Sprintf(`prometheus: {url: %s}
targets:
- name: chat
  selector: '{namespace="llm"}'
  metrics: [{type: queue, target: 24}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  maxReplicaCount: 20
  tune: {history: 1h, dir: %q}
`, srv.URL, dir)), 0o644); err != nil {
		t.Fatal(err)
	}
	lowerBacklog(t, 5)
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"tune", "--config", cfg, "--shard", "0/1", "--workers", "2", "--quiet"}, nil, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	shedWarned(t, "tune --shard", strings.ReplaceAll(errb.String(), "warning: target chat: ", "warning: "))
	if n, m := strings.Count(errb.String(), "warning: "), strings.Count(errb.String(), "warning: target chat: "); n != m {
		t.Errorf("%d of %d warnings name the target; stderr %q", m, n, errb.String())
	}
}

// TestTunePDWarnsShed: tune --pd warns as tune does, each pool's warning
// of a pair policy once (the bound lowered to 50, 40 requests a second).
func TestTunePDWarnsShed(t *testing.T) {
	lowerBacklog(t, 50)
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"tune", "--pd", "--trace", "synthetic:poisson,rate=40,duration=20m,prompt=2000,output=400,seed=1",
		"--stress", "none", "--output", "json", "--quiet"}, nil, &out, &errb)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	shedWarned(t, "tune --pd", errb.String())
}

// TestBacktestPairWarnsShed: backtest on a P/D target's history warns as
// simulate --pd does of each pool's shed requests (the bound lowered to
// 5, pd(fixed:0;fixed:1): no prefill replica, every request held).
func TestBacktestPairWarnsShed(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled history")
	}
	first := time.Now().UTC().Add(-5 * time.Hour).Truncate(time.Hour)
	url := pairHistory(t, first)
	cfg := pairConfig(t, url, `{namespace="llm",pod=~"chat-decode-.*"}`)
	lowerBacklog(t, 5)
	var out, errb bytes.Buffer
	args := []string{"backtest", "--config", cfg, "--target", "chat", "-q", "--output", "json", "-p", "pd(fixed:0;fixed:1)",
		"--start", fmt.Sprint(first.Unix()), "--end", fmt.Sprint(first.Add(2 * time.Hour).Unix()), "--step", "1m"}
	if code := run(context.Background(), args, nil, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	shedWarned(t, "backtest (pair)", errb.String())
}

// lowerBacklog sets the replay's backlog bound to n for the test.
func lowerBacklog(t *testing.T, n int64) {
	old := replay.MaxBacklog
	replay.MaxBacklog = n
	t.Cleanup(func() { replay.MaxBacklog = old })
}
