package kedae2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"github.com/kedacore/keda/v2/pkg/scalers"
	"github.com/kedacore/keda/v2/pkg/scalers/scalersconfig"
	"sigs.k8s.io/yaml"
)

// TestKEDAPrometheusScalerReadsInfscale runs KEDA's own prometheus scaler
// (v2.21.0, pkg/scalers) with the shipped ScaledObject's trigger against a
// real Prometheus that scrapes two infscale exporters (an HA pair of
// deploy/base's installation) both saying 5 for target chat, and a third
// of another installation (the chart's in namespace staging) saying 7 for
// its own target chat.
func TestKEDAPrometheusScalerReadsInfscale(t *testing.T) {
	page := "# TYPE infscale_desired_replicas gauge\ninfscale_desired_replicas{target=\"chat\"} 5\n"
	targets := haExporters(t, page)
	other := exporter(t, "# TYPE infscale_desired_replicas gauge\ninfscale_desired_replicas{target=\"chat\"} 7\n")
	targets[other] = map[string]string{"namespace": "staging", "service": "infscale", "pod": "infscale-c"}
	prom := startPrometheus(t, targets)
	// KEDA queries at time=now truncated to the second (RFC 3339), so wait
	// until the three copies have samples at least 2 s old.
	prom.waitFor(t, `count(infscale_desired_replicas{target="chat"} offset 2s)`, "3")

	b, err := os.ReadFile(filepath.Join("..", "keda", "scaledobject.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var so kedav1alpha1.ScaledObject
	if err := yaml.UnmarshalStrict(b, &so); err != nil {
		t.Fatal(err)
	}
	read := func(t *testing.T, edit func(map[string]string)) (int64, bool, error) {
		t.Helper()
		return scalerRead(t, prom.URL, &so, edit)
	}

	// The shipped trigger: max over the two copies = 5, reported to the
	// HPA as 5000m; with threshold 1 the HPA computes ceil(5000m / 1000m) = 5.
	v, active, err := read(t, func(map[string]string) {})
	if err != nil || v != 5000 || !active {
		t.Errorf("shipped trigger: value %dm active %v err %v; want 5000m, active", v, active, err)
	}
	// Without the installation's labels the query reads staging's chat
	// too, and max takes its 7: the ScaledObject scaled on the higher of
	// the two installations' decisions.
	v, _, err = read(t, func(m map[string]string) { m["query"] = `max(infscale_desired_replicas{target="chat"})` })
	if err != nil || v != 7000 {
		t.Errorf("query without namespace and service: value %dm err %v; want 7000m (the other installation's)", v, err)
	}
	// Trap 4: without max, the copies are several series, which KEDA rejects.
	_, _, err = read(t, func(m map[string]string) { m["query"] = `infscale_desired_replicas{target="chat"}` })
	if err == nil || !strings.Contains(err.Error(), "multiple elements") {
		t.Errorf("two series: want KEDA's 'multiple elements' error, got %v", err)
	}
	// Trap 3: an empty result is an error with ignoreNullValues "false"
	// (then KEDA's fallback holds the replicas) ...
	_, _, err = read(t, func(m map[string]string) { m["query"] = `max(infscale_desired_replicas{target="gone"})` })
	if err == nil {
		t.Error("empty result with ignoreNullValues false: want an error")
	}
	// ... and 0 with KEDA's default, which the HPA would apply as min.
	v, _, err = read(t, func(m map[string]string) {
		m["query"] = `max(infscale_desired_replicas{target="gone"})`
		delete(m, "ignoreNullValues")
	})
	if err != nil || v != 0 {
		t.Errorf("empty result with KEDA's default: value %dm err %v; want 0 (the trap)", v, err)
	}
}

// scalerRead runs KEDA's prometheus scaler on so's first trigger against
// the Prometheus at url, its metadata edited by edit, and returns the one
// metric value it reports (milli-units), whether it is active, and the
// scaler's error.
func scalerRead(t *testing.T, url string, so *kedav1alpha1.ScaledObject, edit func(map[string]string)) (int64, bool, error) {
	t.Helper()
	tr := so.Spec.Triggers[0]
	meta := map[string]string{}
	for k, v := range tr.Metadata {
		meta[k] = v
	}
	meta["serverAddress"] = url
	edit(meta)
	ns := so.Namespace
	if ns == "" {
		ns = "llm"
	}
	s, err := scalers.NewPrometheusScaler(&scalersconfig.ScalerConfig{
		TriggerMetadata: meta, MetricType: tr.MetricType, GlobalHTTPTimeout: 5 * time.Second,
		ScalableObjectName: so.Name, ScalableObjectNamespace: ns, ScalableObjectType: "ScaledObject", TriggerType: tr.Type,
	})
	if err != nil {
		t.Fatalf("%s: NewPrometheusScaler: %v", so.Name, err)
	}
	defer s.Close(context.Background())
	ms, active, err := s.GetMetricsAndActivity(context.Background(), "s0-prometheus")
	if err != nil {
		return 0, false, err
	}
	if len(ms) != 1 {
		t.Fatalf("%s: want one metric value, have %d", so.Name, len(ms))
	}
	return ms[0].Value.MilliValue(), active, nil
}

// haExporters serves page from two infscale exporters (an HA pair, pods
// infscale-a and infscale-b, of deploy/base's installation: namespace and
// service infscale) and returns them as Prometheus scrape targets
// (host:port to labels).
func haExporters(t *testing.T, page string) map[string]map[string]string {
	t.Helper()
	targets := map[string]map[string]string{}
	for _, pod := range []string{"infscale-a", "infscale-b"} {
		// The target labels deploy/base's ServiceMonitor gives: its
		// Service's namespace and name (prometheus-operator).
		targets[exporter(t, page)] = map[string]string{"namespace": "infscale", "service": "infscale", "pod": pod}
	}
	return targets
}

// exporter serves page as a /metrics page until the test ends and returns
// its host:port.
func exporter(t *testing.T, page string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte(page))
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}
