package serve

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/common/model"
)

// exposedMetrics is a Metrics with every kind of series: targets added
// out of name order (one of them forgotten), several reasons, metrics and
// directions per target, counters, a histogram and the leader gauge.
func exposedMetrics(t *testing.T) (*prometheus.Registry, *Metrics) {
	t.Helper()
	reg := prometheus.NewRegistry()
	m := NewMetrics(reg, "v0.0.0-test")
	for _, tg := range []string{"chat", "batch", "zz", "c10", "c9"} {
		m.Init(tg)
	}
	signals := map[string]float64{"queue": 60, "running": 50, "waiting": 10, "held": 2, "kv": 0.31, "cpu": 46, "ttft": 0.25,
		"queue_time": 0.1, "itl": 0.02, "arrival_rate": 2.5, "prompt_tokens_rate": 400, "generation_tokens_rate": 200, "mean_prompt": 160, "mean_output": 80}
	at := t0
	for i, s := range []Snapshot{
		{Target: "chat", Decided: true, Valid: true, Desired: 3, Current: 1, Reason: "DesiredWithinRange", Signals: signals,
			Raw: map[string]int{"queue": 3, "kv": 1}, AllMetrics: []string{"queue", "kv"}, StuckKnown: true},
		{Target: "batch", Decided: true, Valid: true, Desired: 1, Previous: 2, HadPrevious: true, Current: 2, Reason: "ScaleDownStabilized",
			Signals: map[string]float64{"queue": 4}, Raw: map[string]int{"queue": 1}, AllMetrics: []string{"queue"}},
		{Target: "chat", Decided: true, Valid: true, Desired: 2, Previous: 3, HadPrevious: true, Current: 3, Reason: "TooManyReplicas",
			Signals: signals, Raw: map[string]int{"queue": 2}, AllMetrics: []string{"queue", "kv"}, Stuck: 1, StuckKnown: true},
		{Target: "c10", Decided: true, Desired: 1, Current: -1, Reason: "TooFewReplicas", Signals: map[string]float64{}},
		{Target: "c9", Decided: false, Signals: map[string]float64{"kv": 0.5}},
		{Target: "zz", Decided: true, Valid: true, Desired: 4, Previous: 1, HadPrevious: true, Current: 1, Reason: "DesiredWithinRange",
			Signals: map[string]float64{"queue": 100}, Raw: map[string]int{"queue": 4}, AllMetrics: []string{"queue"}},
	} {
		s.At = at.Add(time.Duration(i) * time.Second)
		m.Record(s)
	}
	m.QueryError("chat", "timeout")
	m.QueryError("chat", "empty")
	m.QueryError("batch", "nan")
	m.ApplyError("zz", "scaled_by_hpa")
	m.Applied("chat")
	m.Deduplicated("batch", 3)
	m.ObserveQuery("prometheus", 20*time.Millisecond)
	m.Cycle(150 * time.Millisecond)
	m.Init("gone")
	m.Record(Snapshot{Target: "gone", At: at, Decided: true, Valid: true, Desired: 1, Current: 1, Reason: "DesiredWithinRange"})
	m.Forget("gone")
	return reg, m
}

// TestMetricsExpositionSame: /metrics answers every format, compression
// and name[] filter byte for byte as client_golang's promhttp handler
// over the same families (gatherer), its headers included.
func TestMetricsExpositionSame(t *testing.T) {
	reg, m := exposedMetrics(t)
	ours := metricsHandler(reg, m.table)
	// promhttp finds the error counter ours registered and shares it.
	theirs := promhttp.HandlerFor(gatherer(m, reg), promhttp.HandlerOpts{Registry: reg, EnableOpenMetrics: true})
	for _, accept := range []string{
		"",
		"text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
		"text/plain;version=1.0.0;escaping=allow-utf-8",
		"application/openmetrics-text;version=1.0.0",
		"application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5",
		"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited",
		"application/vnd.google.protobuf;proto=io.prometheus.client.MetricFamily;encoding=delimited;q=0.6,application/openmetrics-text;version=1.0.0;q=0.5",
	} {
		for _, enc := range []string{"", "gzip", "gzip;q=0", "identity, gzip", "identity;q=0.5, gzip", "*", "br", "gzip;q=0.9, identity;q=0.1", "identity;q=0, gzip;q=0"} {
			for _, query := range []string{"", "?name[]=infscale_decisions_total&name[]=go_goroutines&name[]=infscale_cycles_total", "?name[]=infscale_queue_requests"} {
				get := func(h http.Handler) (*httptest.ResponseRecorder, []byte) {
					req := httptest.NewRequest(http.MethodGet, "/metrics"+query, nil)
					if accept != "" {
						req.Header.Set("Accept", accept)
					}
					if enc != "" {
						req.Header.Set("Accept-Encoding", enc)
					}
					rec := httptest.NewRecorder()
					h.ServeHTTP(rec, req)
					body := rec.Body.Bytes()
					if rec.Header().Get("Content-Encoding") == "gzip" {
						zr, err := gzip.NewReader(bytes.NewReader(body))
						if err != nil {
							t.Fatalf("Accept %q, Accept-Encoding %q: %v", accept, enc, err)
						}
						if body, err = io.ReadAll(zr); err != nil {
							t.Fatal(err)
						}
					}
					return rec, body
				}
				want, wantBody := get(theirs)
				got, gotBody := get(ours)
				name := "Accept " + accept + ", Accept-Encoding " + enc + ", " + query
				if got.Code != want.Code {
					t.Errorf("%s: status %d, promhttp %d", name, got.Code, want.Code)
				}
				for _, h := range []string{"Content-Type", "Content-Encoding"} {
					if g, w := got.Header().Get(h), want.Header().Get(h); g != w {
						t.Errorf("%s: %s %q, promhttp %q", name, h, g, w)
					}
				}
				if g, w := strings.Join(got.Header().Values("Vary"), ","), strings.Join(want.Header().Values("Vary"), ","); g != w {
					t.Errorf("%s: Vary %q, promhttp %q", name, g, w)
				}
				if !bytes.Equal(gotBody, wantBody) {
					t.Errorf("%s: body differs from promhttp's:\n%s\n--- promhttp:\n%s", name, gotBody, wantBody)
				}
			}
		}
	}
}

// TestAcceptsGzip: content codings and the q parameter are
// case-insensitive (RFC 9110 8.4.1, 12.4.2), where promhttp takes only
// lower case; the rest is promhttp's choice (TestMetricsExpositionSame).
func TestAcceptsGzip(t *testing.T) {
	for h, want := range map[string]bool{
		"GZIP;Q=0.9, identity;q=0.1": true,
		"Gzip":                       true,
		"gzip; q=0.001":              true,
		"gzip;q=0":                   false,
		"identity, gzip":             false, // a tie: identity, as promhttp
		"identity;q=0.5, gzip":       true,
		"*;q=0.5, identity;q=0.4":    true,
		"deflate, br":                false,
		"":                           false,
	} {
		if got := acceptsGzip([]string{h}); got != want {
			t.Errorf("Accept-Encoding %q: gzip %v, want %v", h, got, want)
		}
	}
}

// TestTableNamesNeedNoEscaping: the table's family and label names are
// valid in the legacy (pre-UTF-8) scheme, which metricsHandler relies on
// to write them without the Encoder's escaping.
func TestTableNamesNeedNoEscaping(t *testing.T) {
	for _, f := range newSeriesTable().families {
		if !model.IsValidLegacyMetricName(f.name) {
			t.Errorf("family %q needs escaping", f.name)
		}
		for _, l := range f.labels {
			if !model.IsValidLegacyMetricName(l) {
				t.Errorf("label %q of %s needs escaping", l, f.name)
			}
		}
	}
}

// TestMetricsExpositionSorted: the table's series come out by label
// values in label name order (reason before target), as a Registry sorts
// them, whatever the order the targets and reasons came in.
func TestMetricsExpositionSorted(t *testing.T) {
	reg, m := exposedMetrics(t)
	req := httptest.NewRequest(http.MethodGet, "/metrics?name[]=infscale_decisions_total&name[]=infscale_desired_replicas", nil)
	rec := httptest.NewRecorder()
	metricsHandler(reg, m.table).ServeHTTP(rec, req)
	var got []string
	for _, l := range strings.Split(rec.Body.String(), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			got = append(got, l)
		}
	}
	want := []string{
		`infscale_decisions_total{reason="DesiredWithinRange",target="chat"} 1`,
		`infscale_decisions_total{reason="DesiredWithinRange",target="zz"} 1`,
		`infscale_decisions_total{reason="ScaleDownStabilized",target="batch"} 1`,
		`infscale_decisions_total{reason="TooFewReplicas",target="c10"} 1`,
		`infscale_decisions_total{reason="TooManyReplicas",target="chat"} 1`,
		`infscale_desired_replicas{target="batch"} 1`,
		`infscale_desired_replicas{target="c10"} 1`,
		`infscale_desired_replicas{target="chat"} 2`,
		`infscale_desired_replicas{target="zz"} 4`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("series:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// blockingWriter is a ResponseWriter whose first Write waits for release.
type blockingWriter struct {
	h       http.Header
	started chan struct{}
	release chan struct{}
	once    bool
}

func (w *blockingWriter) Header() http.Header { return w.h }
func (w *blockingWriter) WriteHeader(int)     {}
func (w *blockingWriter) Write(p []byte) (int, error) {
	if !w.once {
		w.once = true
		close(w.started)
		<-w.release
	}
	return len(p), nil
}

// TestMetricsSlowReaderDoesNotBlockDecisions: while a scrape's reader
// takes nothing, the loop's Record, Forget and Init still run (the table's
// lock is not held while the exposition is written).
func TestMetricsSlowReaderDoesNotBlockDecisions(t *testing.T) {
	reg, m := exposedMetrics(t)
	w := &blockingWriter{h: http.Header{}, started: make(chan struct{}), release: make(chan struct{})}
	done := make(chan struct{})
	go func() {
		defer close(done)
		metricsHandler(reg, m.table).ServeHTTP(w, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	}()
	<-w.started
	recorded := make(chan struct{})
	go func() {
		m.Record(Snapshot{Target: "chat", At: t0.Add(time.Minute), Decided: true, Valid: true, Desired: 5, Current: 2, Reason: "DesiredWithinRange"})
		m.Forget("zz")
		m.Init("new")
		close(recorded)
	}()
	select {
	case <-recorded:
	case <-time.After(10 * time.Second):
		t.Fatal("Record waited for a scrape's reader")
	}
	close(w.release)
	<-done
}
