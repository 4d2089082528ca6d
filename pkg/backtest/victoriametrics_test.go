package backtest

import (
	"bytes"
	"context"
	"errors"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/modelserver"
	"github.com/infscale/infscale/pkg/synthweek/synthweektest"
)

// startVictoriaMetrics starts the VictoriaMetrics single-node binary named
// by $INFSCALE_VICTORIAMETRICS (skipping without it) on a free port with
// openMetrics imported, and returns its URL.
func startVictoriaMetrics(t *testing.T, openMetrics []byte) string {
	t.Helper()
	bin := os.Getenv("INFSCALE_VICTORIAMETRICS")
	if bin == "" {
		t.Skip("INFSCALE_VICTORIAMETRICS unset: the path of a victoria-metrics binary (docs/promql.md#servers)")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var log bytes.Buffer
	cmd := exec.Command(bin, "-storageDataPath="+t.TempDir(), "-httpListenAddr="+addr, "-retentionPeriod=100y")
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("victoria-metrics log:\n%s", log.String())
		}
	})
	url := "http://" + addr
	deadline := time.Now().Add(30 * time.Second)
	for {
		r, err := http.Get(url + "/health")
		if err == nil {
			r.Body.Close()
			if r.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("victoria-metrics at %s not healthy after 30s: %v", url, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	post := func(path string, body []byte) {
		t.Helper()
		r, err := http.Post(url+path, "text/plain", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
		if r.StatusCode/100 != 2 {
			t.Fatalf("POST %s: %s", path, r.Status)
		}
	}
	post("/api/v1/import/prometheus", openMetrics)
	r, err := http.Get(url + "/internal/force_flush")
	if err != nil {
		t.Fatal(err)
	}
	r.Body.Close()
	return url
}

// TestCalibrateRefusesVictoriaMetrics: MetricsQL's rate() also counts the
// last sample before its window, so a calibration window of 2 scrapes
// reads 3 (its counters span one scrape more than its gauges). On
// synth-week's history that fitted a step overhead of 2.45 ms where
// Prometheus 2.53 and 3.x fit the truth's 2.00: FetchWindows refuses the
// server before it reads a window.
func TestCalibrateRefusesVictoriaMetrics(t *testing.T) {
	var om bytes.Buffer
	truth, err := synthweektest.WriteReplica(&om, truthReplica(synthweektest.Replica{Windows: 20}))
	if err != nil {
		t.Fatal(err)
	}
	url := startVictoriaMetrics(t, om.Bytes())
	api, ms, g := llmHistory(t, url, truth.Start, truth.End)
	_, _, err = FetchWindows(context.Background(), api, Target{Server: modelserver.VLLM, Selector: ms}, g, nil)
	if !errors.Is(err, ErrMetricsQL) {
		t.Fatalf("FetchWindows on VictoriaMetrics: err %v, want ErrMetricsQL", err)
	}
	for _, want := range []string{"VictoriaMetrics", "sample before", "Prometheus"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	t.Log(err)
}
