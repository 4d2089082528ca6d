package serve

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
)

// Handler serves serve's HTTP endpoints:
//
//	/metrics          the registry (Go/process collectors, infscale's) and loop's Metrics table
//	/healthz          200 while the process runs
//	/readyz           200 after the first cycle with a decision on known signals, else 503
//	/debug/decisions  JSON {target: [Record...]}: the last decisions, newest last (with steps)
func Handler(reg *prometheus.Registry, loop *Loop) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", metricsHandler(reg, loop.metrics.table))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Write([]byte("ok\n"))
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, _ *http.Request) {
		if !loop.Ready() {
			http.Error(w, "not ready: no decision on known signals yet", http.StatusServiceUnavailable)
			return
		}
		w.Write([]byte("ready\n"))
	})
	mux.HandleFunc("GET /debug/decisions", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(loop.RecentJSON())
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<html><body><h1>infscale serve</h1><ul><li><a href="/metrics">/metrics</a></li><li><a href="/debug/decisions">/debug/decisions</a></li><li><a href="/readyz">/readyz</a></li></ul></body></html>`))
	})
	return mux
}
