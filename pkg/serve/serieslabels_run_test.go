package serve

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/infscale/infscale/internal/buftest"
	"github.com/infscale/infscale/pkg/config"
)

// TestRunSeriesLabels: serve started with prometheus.series_labels asks its
// startup rebuild's queries with them (read as Prometheus received them),
// and its tuner's revert lookup is given them; a reload that changes them
// is logged as needing a restart.
func TestRunSeriesLabels(t *testing.T) {
	var mu sync.Mutex
	var queries []string
	prom := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		mu.Lock()
		queries = append(queries, r.FormValue("query"))
		mu.Unlock()
		if strings.HasSuffix(r.URL.Path, "/query_range") {
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[]}}`)
			return
		}
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
	}))
	defer prom.Close()
	const cfgText = "prometheus: {url: '%s', timeout: 2s, series_labels: {namespace: %s, service: infscale}}\npollingInterval: 15s\ntargets:\n" +
		"- {name: chat, selector: '{pod=\"chat\"}', metrics: [{type: queue, target: 24}], maxReplicaCount: 8}\n"
	path := filepath.Join(t.TempDir(), "infscale.yaml")
	if err := os.WriteFile(path, fmt.Appendf(nil, cfgText, prom.URL, "staging"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if tn := newTuning(prometheus.NewRegistry(), &fakeSource{}, cfg, Options{}, nil); tn.SeriesLabels["namespace"] != "staging" || tn.SeriesLabels["service"] != "infscale" || len(tn.SeriesLabels) != 2 {
		t.Errorf("tuner's SeriesLabels %v, want namespace staging, service infscale", tn.SeriesLabels)
	}
	var logs buftest.Buffer
	reload := make(chan os.Signal, 1)
	_, stop, done := startRun(t, cfg, Options{ConfigPath: path, Reload: reload, Version: "test", Log: slog.New(slog.NewTextHandler(&logs, nil))})
	defer stop()
	rebuilt := `max(infscale_desired_replicas{namespace="staging",service="infscale",target="chat"})`
	waitFor(t, "the rebuild's query "+rebuilt, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(queries, rebuilt)
	})
	if err := os.WriteFile(path, fmt.Appendf(nil, cfgText, prom.URL, "dev"), 0o644); err != nil {
		t.Fatal(err)
	}
	reload <- syscall.SIGHUP
	waitFor(t, "the reload's warning", func() bool {
		return strings.Contains(logs.String(), `msg="prometheus.series_labels changes need a restart`)
	})
	if got := logs.String(); !strings.Contains(got, `running="map[namespace:staging service:infscale]" configured="map[namespace:dev service:infscale]"`) {
		t.Errorf("log:\n%s\nwant the running and configured labels named", got)
	}
	stop()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}
