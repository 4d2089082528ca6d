package kedae2e

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// This module cannot import internal/promtest: that would put the main
// module's github.com/prometheus/client_golang v1.25.0 in the build, and
// KEDA v2.21.0's pkg/scalers (predictkube_scaler.go) does not compile
// against it (v1.25.0's API.Query returns 4 values, KEDA expects 3). So it
// starts the same pinned binary (tools/bin/prometheus, or
// $INFSCALE_PROMETHEUS) with a few lines of its own.

// prometheus is a Prometheus server started for one test.
type prometheus struct {
	URL string
}

// startPrometheus runs the pinned Prometheus on a free loopback port with a
// temporary data directory, scraping targets (host:port -> labels) every
// second, and stops it when the test ends. It skips when the binary is
// missing, except under CI=true where it fails.
func startPrometheus(t *testing.T, targets map[string]map[string]string) *prometheus {
	t.Helper()
	bin := os.Getenv("INFSCALE_PROMETHEUS")
	if bin == "" {
		bin = filepath.Join("..", "..", "tools", "bin", "prometheus")
	}
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("prometheus binary: %v (run `make tools`)", err)
		}
		t.Skipf("prometheus binary: %v (run `make tools` or set INFSCALE_PROMETHEUS)", err)
	}
	type static struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels"`
	}
	var statics []static
	for addr, labels := range targets {
		statics = append(statics, static{Targets: []string{addr}, Labels: labels})
	}
	cfg, _ := json.Marshal(map[string]any{
		"global":         map[string]string{"scrape_interval": "1s", "evaluation_interval": "1s"},
		"scrape_configs": []any{map[string]any{"job_name": "infscale", "static_configs": statics}},
	})
	dir := t.TempDir()
	cfgFile := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgFile, cfg, 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	var log bytes.Buffer
	cmd := exec.Command(bin, "--config.file="+cfgFile, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr)
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		if t.Failed() {
			t.Logf("prometheus log:\n%s", log.String())
		}
	})
	p := &prometheus{URL: "http://" + addr}
	deadline := time.Now().Add(30 * time.Second)
	for {
		resp, err := http.Get(p.URL + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p
			}
		}
		select {
		case <-done:
			t.Fatalf("prometheus exited:\n%s", log.String())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready after 30 s:\n%s", log.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// scalar evaluates an instant query expected to return one sample and
// returns its value as text ("" when the result is empty).
func (p *prometheus) scalar(t *testing.T, q string) string {
	t.Helper()
	resp, err := http.Get(p.URL + "/api/v1/query?query=" + url.QueryEscape(q))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Data struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatal(err)
	}
	if len(r.Data.Result) == 0 {
		return ""
	}
	return fmt.Sprint(r.Data.Result[0].Value[1])
}

// waitFor polls q until it returns want, for up to 30 s.
func (p *prometheus) waitFor(t *testing.T, q, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := p.scalar(t, q)
		if strings.TrimSpace(got) == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s = %q after 30 s, want %q", q, got, want)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
