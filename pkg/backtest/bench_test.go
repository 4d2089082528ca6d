package backtest

import (
	"bufio"
	"context"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/modelserver"
	"github.com/infscale/infscale/pkg/promql"
	"github.com/infscale/infscale/pkg/replay"
	"github.com/infscale/infscale/pkg/replica"
	"github.com/infscale/infscale/pkg/synthweek"
	"github.com/infscale/infscale/pkg/synthweek/synthweektest"
)

// BenchmarkWeek is issue 5's performance case: a week of history (30 s
// scrapes) at a 30 s step, 5 policies plus the actual timeline, against a
// real Prometheus. It reports the query time and the replay time
// separately and the peak RSS of the timed part (VmHWM reset through
// /proc/self/clear_refs). Run it alone: go test -run '^$' -bench Week
// -benchtime 1x ./pkg/backtest/ (setup writes ~180 MB and backfills it).
func BenchmarkWeek(b *testing.B) {
	srv, truth := synthweektest.Serve(b, synthweek.Config{Scrape: 30 * time.Second})
	api, err := promql.NewClient(promql.ClientConfig{URL: srv.URL, Timeout: 5 * time.Minute})
	if err != nil {
		b.Fatal(err)
	}
	ms, _ := promql.ParseSelector(`{namespace="llm"}`)
	g, _ := NewGrid(truth.Start, truth.End, 30*time.Second)
	tgt := Target{Server: modelserver.VLLM, Selector: ms,
		Replicas: `sum(kube_deployment_spec_replicas{namespace="llm",deployment="chat"})`}
	r, err := replica.New(replica.DefaultConfig())
	if err != nil {
		b.Fatal(err)
	}
	var pols []replay.Policy
	for _, s := range []string{"queue:24", "queue:24,lookahead=90", "queue:24,min=0,cooldown=120", "recommended", "oracle"} {
		p, err := replay.ParsePolicy(s)
		if err != nil {
			b.Fatal(err)
		}
		pols = append(pols, p)
	}
	resetPeakRSS()
	b.ResetTimer()
	for b.Loop() {
		h, st, err := Fetch(context.Background(), api, tgt, g, nil)
		if err != nil {
			b.Fatal(err)
		}
		w, err := Reconstruct(h, Options{})
		if err != nil {
			b.Fatal(err)
		}
		rep, err := Run(context.Background(), w, Config{Policies: pols, Seed: 1, Replay: replay.Config{Model: r}})
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(st.Duration.Seconds(), "query-s")
		b.ReportMetric(rep.ReplayTime.Seconds(), "replay-s")
		b.ReportMetric(float64(st.Points), "points")
		b.ReportMetric(w.Requests, "requests")
	}
	b.ReportMetric(peakRSSMiB(), "peak-MiB")
}

// resetPeakRSS resets the kernel's VmHWM of this process (Linux >= 4.0).
func resetPeakRSS() { _ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) }

// peakRSSMiB reads VmHWM from /proc/self/status (0 when unavailable).
func peakRSSMiB() float64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 64)
			return kb / 1024
		}
	}
	return 0
}
