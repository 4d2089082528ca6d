package serve

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/infscale/infscale/pkg/config"
)

// benchPrometheus answers pkg/promql's batched queries: one sample per
// label_replace branch, labelled infscale_target="<k>", with a value by
// signal (running 50, waiting 10, reporting 2, kv 0.3; no stuck pod). Answers are encoded
// once per distinct query so that the fake costs little CPU in the
// benchmark's process.
func benchPrometheus(b *testing.B) (*httptest.Server, *int64) {
	srv, queries, _ := benchPrometheusBytes(b)
	return srv, queries
}

// benchPrometheusBytes is benchPrometheus that also counts the bytes of
// the queries' text.
// benchTimeMark stands for the evaluation time in a cached answer.
const benchTimeMark = "\x00time"

func benchPrometheusBytes(b *testing.B) (*httptest.Server, *int64, *int64) {
	var mu sync.Mutex
	cache := map[string][][]byte{} // a query's answer, split where its samples' time goes
	var queries, qbytes int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.FormValue("query")
		mu.Lock()
		queries++
		qbytes += int64(len(q))
		parts, ok := cache[q]
		if !ok {
			val := "0.3"
			switch {
			case strings.HasPrefix(strings.TrimLeft(q, "("), "label_replace(count("): // the batch's or-tree opens with parentheses
				val = "2"
			case strings.Contains(q, "num_requests_running"):
				val = "50"
			case strings.Contains(q, "num_requests_waiting"):
				val = "10"
			}
			n := strings.Count(q, "label_replace(")
			if strings.Contains(q, "min_over_time") {
				n = 0 // pkg/promql's stuck queries: no pod is stuck (count/sum of none)
			}
			var sb strings.Builder
			sb.WriteString(`{"status":"success","data":{"resultType":"vector","result":[`)
			for k := range n {
				if k > 0 {
					sb.WriteByte(',')
				}
				fmt.Fprintf(&sb, `{"metric":{"infscale_target":"%d"},"value":[%s,"%s"]}`, k, benchTimeMark, val)
			}
			sb.WriteString(`]}}`)
			parts = bytes.Split([]byte(sb.String()), []byte(benchTimeMark))
			cache[q] = parts
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		// At the evaluation time asked, as Prometheus answers.
		w.Write(bytes.Join(parts, []byte(r.FormValue("time"))))
	}))
	b.Cleanup(srv.Close)
	return srv, &queries, &qbytes
}

func benchConfig(b *testing.B, url string, n int) *config.File {
	var sb strings.Builder
	fmt.Fprintf(&sb, "prometheus: {url: %s}\ntargets:\n", url)
	for i := range n {
		fmt.Fprintf(&sb, "- {name: t%d, selector: '{namespace=\"llm\", deployment=\"t%d\"}', metrics: [{type: queue, target: 24}, {type: kv, target: 0.8}], max: 8}\n", i, i)
	}
	cfg, err := config.Parse([]byte(sb.String()), "bench.yaml")
	if err != nil {
		b.Fatal(err)
	}
	return cfg
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// rssMiB reads the process's peak resident set (VmHWM) from /proc.
func rssMiB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmHWM:") {
			f := strings.Fields(l)
			kb, _ := strconv.ParseFloat(f[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// BenchmarkCycle1000Targets is one decision cycle of serve for 1,000
// targets (queue and kv metrics) against a fake Prometheus over HTTP:
// batched queries, JSON decoding, 1,000 decisions and their export. It
// reports Prometheus queries per cycle, CPU time per cycle (the whole
// process: infscale plus the fake, which decodes the ~400 kB batched
// queries), the process's peak RSS during the cycles (test binary and fake
// included; the setup's peak is reset through /proc/self/clear_refs) and
// the live heap after a GC (what serve holds between cycles).
// Goals (issue 4): <= 10 queries, < 50 ms CPU, < 64 MiB RSS.
func BenchmarkCycle1000Targets(b *testing.B) { benchCycle(b, 1000, false) }

// BenchmarkCycle5000Targets and BenchmarkCycle10000Targets are the same
// cycle at 5 and 10 times the targets, to show the cost is linear in
// targets. Goal at 10,000 targets and a 15 s interval (docs/ha.md): <= 10
// queries, <= 300 ms CPU, <= 256 MiB per cycle.
func BenchmarkCycle5000Targets(b *testing.B)  { benchCycle(b, 5000, false) }
func BenchmarkCycle10000Targets(b *testing.B) { benchCycle(b, 10000, false) }

// BenchmarkCycleScrape10000Targets is BenchmarkCycle10000Targets with a
// Prometheus's read of /metrics (gzip, OpenMetrics) after every cycle: a
// 15 s ServiceMonitor against a 15 s interval, what a cycle costs in a
// cluster.
func BenchmarkCycleScrape10000Targets(b *testing.B) { benchCycle(b, 10000, true) }

func benchCycle(b *testing.B, n int, scrape bool) {
	srv, queries, qbytes := benchPrometheusBytes(b)
	cfg := benchConfig(b, srv.URL, n)
	src, err := NewSource(cfg)
	if err != nil {
		b.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, "bench")
	l := newLoop(b, LoopOptions{Source: src, Metrics: m, Interval: time.Minute})
	if err := l.SetConfig(context.Background(), cfg); err != nil {
		b.Fatal(err)
	}
	h := Handler(reg, l)
	now := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	l.now = func() time.Time { return now }
	l.Cycle(context.Background()) // warm: plans, series
	last := fmt.Sprintf("t%d", n-1)
	if r := lastRecord(l, last); r.Desired != 3 {
		b.Fatalf("%s desired %d, want ceil(60/24) = 3 (reason %s, errors %v)", last, r.Desired, r.Reason, r.Errors)
	}
	// Reset the peak RSS after setup (parsing the config is a one-off
	// peak): what is measured is the cycles' steady state.
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	q0, qb0 := *queries, *qbytes
	cpu0 := cpuTime()
	b.ReportAllocs()
	if path := os.Getenv("BENCH_CYCLE_ALLOCBASE"); path != "" {
		writeHeapProfile(b, path) // the -base of a diff against BENCH_CYCLE_HEAPPROFILE
	}
	stop := cycleProfile(b)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		now = now.Add(15 * time.Second)
		l.Cycle(context.Background())
		if scrape {
			req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
			req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0")
			req.Header.Set("Accept-Encoding", "gzip")
			h.ServeHTTP(&countingWriter{}, req)
		}
	}
	b.StopTimer()
	stop()
	b.ReportMetric(float64(*queries-q0)/float64(b.N), "queries/cycle")
	b.ReportMetric(float64(*qbytes-qb0)/float64(*queries-q0)/(1<<20), "MiB/query")
	b.ReportMetric(float64(cpuTime()-cpu0)/float64(b.N)/1e6, "cpu-ms/cycle")
	b.ReportMetric(rssMiB(), "peak-rss-MiB")
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	b.ReportMetric(float64(ms.HeapInuse)/(1<<20), "live-heap-MiB")
	if path := os.Getenv("BENCH_CYCLE_HEAPPROFILE"); path != "" {
		writeHeapProfile(b, path)
	}
	runtime.KeepAlive(l)
}

func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}

// cycleProfile starts a CPU profile of the steady cycles only (setup and
// the warm cycle left out) when $BENCH_CYCLE_CPUPROFILE names a file, and
// returns the function that stops it. ($BENCH_CYCLE_HEAPPROFILE names the
// file of a heap profile written after the cycles, the loop still live;
// $BENCH_CYCLE_ALLOCBASE one written before them, the -base that leaves
// the cycles' own allocations.)
func cycleProfile(b *testing.B) func() {
	path := os.Getenv("BENCH_CYCLE_CPUPROFILE")
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Fatal(err)
	}
	return func() { pprof.StopCPUProfile(); f.Close() }
}

// BenchmarkScrape1000Targets is one read of /metrics (OpenMetrics text)
// after a cycle of BenchmarkCycle1000Targets's 1,000 targets: ~14 series per
// target. It is paid once per scrape of serve, not per cycle.
func BenchmarkScrape1000Targets(b *testing.B) { benchScrape(b, 1000, false) }

// BenchmarkScrape10000Targets is the same read at 10,000 targets (140,000
// series, about 12 MB of text), and BenchmarkScrape10000TargetsGzip the
// read a Prometheus makes (Accept-Encoding: gzip).
func BenchmarkScrape10000Targets(b *testing.B)     { benchScrape(b, 10000, false) }
func BenchmarkScrape10000TargetsGzip(b *testing.B) { benchScrape(b, 10000, true) }

func benchScrape(b *testing.B, n int, gz bool) {
	srv, _ := benchPrometheus(b)
	cfg := benchConfig(b, srv.URL, n)
	src, err := NewSource(cfg)
	if err != nil {
		b.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	l := newLoop(b, LoopOptions{Source: src, Metrics: NewMetrics(reg, "bench"), Interval: time.Minute})
	if err := l.SetConfig(context.Background(), cfg); err != nil {
		b.Fatal(err)
	}
	l.Cycle(context.Background())
	h := Handler(reg, l)
	var out countingWriter
	b.ReportAllocs()
	for b.Loop() {
		out.n = 0
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
		if gz {
			req.Header.Set("Accept-Encoding", "gzip")
		}
		h.ServeHTTP(&out, req)
		if out.code != 0 && out.code != http.StatusOK {
			b.Fatalf("status %d", out.code)
		}
		b.SetBytes(out.n)
	}
}

// countingWriter is a ResponseWriter that counts the body and keeps
// nothing (a recorder's buffer would be measured with the read).
type countingWriter struct {
	h    http.Header
	code int
	n    int64
}

func (w *countingWriter) Header() http.Header {
	if w.h == nil {
		w.h = http.Header{}
	}
	return w.h
}
func (w *countingWriter) WriteHeader(code int) { w.code = code }
func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

// BenchmarkRecent10000Targets is one /debug/decisions read's work under
// the loop's lock (Recent: every target's last decision explained again)
// at 10,000 targets, and a read of the same answer once made (RecentJSON:
// no lock, until the next cycle).
func BenchmarkRecent10000Targets(b *testing.B) {
	srv, _, _ := benchPrometheusBytes(b)
	cfg := benchConfig(b, srv.URL, 10000)
	src, err := NewSource(cfg)
	if err != nil {
		b.Fatal(err)
	}
	l := newLoop(b, LoopOptions{Source: src, Metrics: NewMetrics(prometheus.NewRegistry(), "bench"), Interval: time.Minute})
	if err := l.SetConfig(context.Background(), cfg); err != nil {
		b.Fatal(err)
	}
	now := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	l.now = func() time.Time { return now }
	l.Cycle(context.Background())
	b.Run("Recent", func(b *testing.B) {
		for b.Loop() {
			_ = l.Recent()
		}
	})
	b.Run("RecentJSON", func(b *testing.B) {
		for b.Loop() {
			_ = l.RecentJSON()
		}
	})
}
