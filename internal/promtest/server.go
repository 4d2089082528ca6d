package promtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/infscale/infscale/internal/buftest"
	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
)

// Target is one /metrics endpoint for Prometheus to scrape.
type Target struct {
	// URL is the full metrics URL, e.g. http://127.0.0.1:41234/metrics.
	URL string
	// Labels are added to every series of the target (e.g. pod, namespace),
	// as a Kubernetes service discovery would.
	Labels map[string]string
}

// Options configure Start. The zero value starts an empty Prometheus.
type Options struct {
	// Targets are scraped by one job "infscale" (ignored when Config is set).
	Targets []Target
	// ScrapeInterval is the scrape and evaluation interval (default 1s).
	ScrapeInterval time.Duration
	// Config, when not empty, is the whole prometheus.yml, used verbatim.
	Config string
	// DataDir is an existing TSDB directory (e.g. from Backfill); default a
	// fresh temporary directory.
	DataDir string
	// Flags are extra command-line flags, e.g. --query.lookback-delta=10s.
	Flags []string
}

// Server is a running Prometheus.
type Server struct {
	// URL is the base URL, http://127.0.0.1:<port>.
	URL string
	// DataDir is the TSDB directory.
	DataDir string

	cmd     *exec.Cmd
	log     *buftest.Buffer
	done    chan struct{}
	stopped sync.Once
}

// Start runs Prometheus and waits until /-/ready answers 200. It stops the
// server on t.Cleanup and prints the server's log when the test failed.
// It skips (or fails under CI=true) when the binary is unavailable.
func Start(t testing.TB, opts Options) *Server {
	t.Helper()
	bin := Binary(t, Prometheus)
	dir := t.TempDir()
	cfg := opts.Config
	if cfg == "" {
		var err error
		if cfg, err = config(opts); err != nil {
			t.Fatalf("promtest: %v", err)
		}
	}
	cfgPath := filepath.Join(dir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	data := opts.DataDir
	if data == "" {
		data = filepath.Join(dir, "data")
	}
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		s, err := start(bin, cfgPath, data, opts.Flags)
		if err == nil {
			t.Cleanup(func() {
				s.Stop()
				if t.Failed() {
					t.Logf("promtest: Prometheus log (%s):\n%s", s.URL, s.log.String())
				}
			})
			return s
		}
		lastErr = err // most likely the free port was taken meanwhile
	}
	t.Fatalf("promtest: %v", lastErr)
	return nil
}

func start(bin, cfgPath, data string, flags []string) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	args := append([]string{
		"--config.file=" + cfgPath,
		"--storage.tsdb.path=" + data,
		"--web.listen-address=" + addr,
		"--log.level=info",
	}, flags...)
	if !slices.ContainsFunc(flags, func(f string) bool { return strings.Contains(f, "scrape.discovery-reload-interval") }) {
		// A hidden flag (default 5s): how often the scrape manager applies
		// new targets. At 1s the first scrape lands about 1 s after start
		// instead of about 5 s.
		args = append(args, "--scrape.discovery-reload-interval=1s")
	}
	s := &Server{URL: "http://" + addr, DataDir: data, log: &buftest.Buffer{Limit: 1 << 20}, done: make(chan struct{})}
	s.cmd = exec.Command(bin, args...)
	s.cmd.Stdout, s.cmd.Stderr = s.log, s.log
	if err := s.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	go func() { _ = s.cmd.Wait(); close(s.done) }()

	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-s.done:
			return nil, fmt.Errorf("prometheus exited before ready: %v\n%s", s.cmd.ProcessState, s.log.String())
		default:
		}
		resp, err := http.Get(s.URL + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return s, nil
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	s.Stop()
	return nil, fmt.Errorf("prometheus not ready after 60s:\n%s", s.log.String())
}

// Stop terminates the server (SIGTERM, then SIGKILL after 10 s) and waits
// for it. Safe to call more than once; tests call it to simulate an outage.
func (s *Server) Stop() {
	s.stopped.Do(func() {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-s.done:
		case <-time.After(10 * time.Second):
			_ = s.cmd.Process.Kill()
			<-s.done
		}
	})
}

// Log returns what the server has logged so far.
func (s *Server) Log() string { return s.log.String() }

// API returns a client_golang API client for the server.
func (s *Server) API(t testing.TB) v1.API {
	t.Helper()
	c, err := api.NewClient(api.Config{Address: s.URL})
	if err != nil {
		t.Fatal(err)
	}
	return v1.NewAPI(c)
}

// WaitFor evaluates query every 200 ms until ok accepts its instant vector,
// and returns that vector. It fails the test after timeout, showing the last
// result. Use it to wait for the first scrapes instead of sleeping.
func (s *Server) WaitFor(t testing.TB, query string, timeout time.Duration, ok func(model.Vector) bool) model.Vector {
	t.Helper()
	a := s.API(t)
	deadline := time.Now().Add(timeout)
	var last string
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		v, _, _, err := a.Query(ctx, query, time.Now())
		cancel()
		if err == nil {
			if vec, isVec := v.(model.Vector); isVec && ok(vec) {
				return vec
			}
			last = fmt.Sprint(v)
		} else {
			last = err.Error()
		}
		if time.Now().After(deadline) {
			t.Fatalf("promtest: %q not satisfied after %s; last result: %s", query, timeout, last)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// config renders prometheus.yml for opts as JSON (a subset of YAML): one job
// "infscale" whose static targets carry their labels and metrics path.
func config(opts Options) (string, error) {
	iv := opts.ScrapeInterval
	if iv <= 0 {
		iv = time.Second
	}
	type static struct {
		Targets []string          `json:"targets"`
		Labels  map[string]string `json:"labels,omitempty"`
	}
	var statics []static
	for _, tg := range opts.Targets {
		u, err := url.Parse(tg.URL)
		if err != nil || u.Host == "" {
			return "", fmt.Errorf("target URL %q: want http://host:port/path", tg.URL)
		}
		lbls := map[string]string{"__metrics_path__": u.Path, "__scheme__": u.Scheme}
		if u.Path == "" {
			lbls["__metrics_path__"] = "/metrics"
		}
		for k, v := range tg.Labels {
			lbls[k] = v
		}
		statics = append(statics, static{Targets: []string{u.Host}, Labels: lbls})
	}
	d := model.Duration(iv).String()
	cfg := map[string]any{
		"global": map[string]any{"scrape_interval": d, "evaluation_interval": d, "scrape_timeout": d},
	}
	if len(statics) > 0 {
		cfg["scrape_configs"] = []any{map[string]any{"job_name": "infscale", "static_configs": statics}}
	}
	b, err := json.MarshalIndent(cfg, "", "  ")
	return string(b), err
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
