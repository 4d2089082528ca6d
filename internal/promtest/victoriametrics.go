package promtest

import (
	"bytes"
	"net"
	"net/http"
	"os"
	"os/exec"
	"testing"
	"time"
)

// StartVictoriaMetrics starts the VictoriaMetrics single-node binary named
// by $INFSCALE_VICTORIAMETRICS on a free port with openMetrics (text
// exposition or OpenMetrics) imported, and returns its URL. It skips the
// test without the variable, under CI too: neither make tools nor CI
// builds VictoriaMetrics (docs/promql.md#servers says how).
func StartVictoriaMetrics(t testing.TB, openMetrics []byte) string {
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
