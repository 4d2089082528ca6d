package serve

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
)

// BenchmarkServeProcess1000Targets measures the real `infscale serve`
// binary (built into a temporary directory) deciding for 1,000 targets
// every second against the fake Prometheus of BenchmarkCycle1000Targets
// (served by this test process, so its cost is not counted): CPU time per
// cycle from /proc/<pid>/stat over 10 s after the 2nd cycle, with a
// Prometheus's gzip read of /metrics every interval (one per cycle, as a
// 15 s ServiceMonitor against a 15 s interval); the process's peak RSS
// (VmHWM, startup included), its RSS at the end (VmRSS) and the anonymous
// part of it (RssAnon: the heap, stacks and runtime, without the binary's
// file pages), and the GC goal. Run it with -benchtime 1x;
// BENCH_NO_SCRAPE=1 leaves the reads out (the cycles alone).
func BenchmarkServeProcess1000Targets(b *testing.B) {
	benchServeProcess(b, 1000, time.Second, 10*time.Second)
}

// BenchmarkServeProcess5000Targets and BenchmarkServeProcess10000Targets
// are the same at 5 and 10 times the targets, deciding every 2 s (a cycle
// must fit in its interval) over 20 s. Goal at 10,000 targets (docs/ha.md):
// <= 300 ms CPU per cycle, <= 256 MiB.
func BenchmarkServeProcess5000Targets(b *testing.B) {
	benchServeProcess(b, 5000, 2*time.Second, 20*time.Second)
}
func BenchmarkServeProcess10000Targets(b *testing.B) {
	benchServeProcess(b, 10000, 2*time.Second, 20*time.Second)
}

func benchServeProcess(b *testing.B, n int, interval, span time.Duration) {
	if testing.Short() {
		b.Skip("builds the binary and runs it for about 15 s")
	}
	dir := b.TempDir()
	bin := filepath.Join(dir, "infscale")
	if out, err := exec.Command("go", "build", "-o", bin, "../../cmd/recommender").CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	srv, _ := benchPrometheus(b)
	var sb strings.Builder
	fmt.Fprintf(&sb, "prometheus: {url: %s}\ninterval: %s\ntargets:\n", srv.URL, model.Duration(interval))
	for i := range n {
		fmt.Fprintf(&sb, "- {name: t%d, selector: '{namespace=\"llm\", deployment=\"t%d\"}', metrics: [{type: queue, target: 24}, {type: kv, target: 0.8}], max: 8}\n", i, i)
	}
	cfg := filepath.Join(dir, "serve.yaml")
	if err := os.WriteFile(cfg, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	addr := freeAddrB(b)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "serve", "--config", cfg, "--listen", addr, "--log-level", "error")
	cmd.Stderr = os.Stderr
	// BENCH_GOGC, BENCH_GOMEMLIMIT, BENCH_GODEBUG pass GOGC, GOMEMLIMIT, GODEBUG to serve.
	cmd.Env = os.Environ()
	for _, k := range []string{"GOGC", "GOMEMLIMIT", "GODEBUG"} {
		if v := os.Getenv("BENCH_" + k); v != "" {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	defer func() { cancel(); _ = cmd.Wait() }()
	pid := cmd.Process.Pid
	cyclesRE := regexp.MustCompile(`(?m)^infscale_cycles_total (\d+)`)
	nextGCRE := regexp.MustCompile(`(?m)^go_memstats_next_gc_bytes ([0-9.e+]+)`)
	var nextGC float64
	cycles := func() int {
		resp, err := http.Get("http://" + addr + "/metrics")
		if err != nil {
			return -1
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		if g := nextGCRE.FindSubmatch(body); g != nil {
			nextGC, _ = strconv.ParseFloat(string(g[1]), 64)
		}
		m := cyclesRE.FindSubmatch(body)
		if m == nil {
			return -1
		}
		n, _ := strconv.Atoi(string(m[1]))
		return n
	}
	wait := func(n int) int {
		deadline := time.Now().Add(120 * time.Second)
		for {
			if c := cycles(); c >= n {
				return c
			}
			if time.Now().After(deadline) {
				b.Fatalf("serve did not reach %d cycles", n)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	b.ResetTimer()
	// Poll only until the 2nd cycle. From then on, a Prometheus's scrape
	// (gzip, OpenMetrics) every interval, as the ServiceMonitor's 15 s
	// against serve's 15 s: each cycle's CPU includes one /metrics read
	// of ~14 series per target.
	c0 := wait(2)
	t0 := procCPU(b, pid)
	scrapes, stop := make(chan int, 1), make(chan struct{})
	prom := &http.Transport{DisableCompression: true} // gzip asked for and read as sent
	defer prom.CloseIdleConnections()
	go func() {
		reads := 0
		defer func() { scrapes <- reads }()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		if os.Getenv("BENCH_NO_SCRAPE") != "" { // the cycles alone
			<-stop
			return
		}
		for {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			req, _ := http.NewRequest(http.MethodGet, "http://"+addr+"/metrics", nil)
			req.Header.Set("Accept", "application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.2")
			req.Header.Set("Accept-Encoding", "gzip")
			resp, err := prom.RoundTrip(req)
			if err != nil {
				continue
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			reads++
		}
	}()
	time.Sleep(span)
	close(stop)
	reads := <-scrapes
	t1 := procCPU(b, pid)
	c1 := cycles()
	b.StopTimer()
	b.ReportMetric(float64(t1-t0)/float64(c1-c0)/1e6, "cpu-ms/cycle")
	b.ReportMetric(float64(reads)/float64(c1-c0), "scrapes/cycle")
	b.ReportMetric(procKB(b, pid, "VmHWM:")/1024, "peak-rss-MiB")
	b.ReportMetric(procKB(b, pid, "VmRSS:")/1024, "rss-MiB")
	b.ReportMetric(procKB(b, pid, "RssAnon:")/1024, "rss-anon-MiB")
	b.ReportMetric(nextGC/(1<<20), "next-gc-MiB")
}

func freeAddrB(b *testing.B) string {
	l, err := netListen()
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// procCPU is utime + stime of pid (clock ticks of 10 ms).
func procCPU(b *testing.B, pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+2:]))
	ut, _ := strconv.ParseInt(f[11], 10, 64)
	st, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(ut+st) * 10 * time.Millisecond
}

func procKB(b *testing.B, pid int, key string) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, l := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(l, key) {
			v, _ := strconv.ParseFloat(strings.Fields(l)[1], 64)
			return v
		}
	}
	return 0
}

func netListen() (interface {
	Addr() net.Addr
	Close() error
}, error) {
	return net.Listen("tcp", "127.0.0.1:0")
}
