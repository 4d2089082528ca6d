package serve

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	prommodel "github.com/prometheus/common/model"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/promql"
)

// TestTuningAsksHistoryAgain: serve's in-process tuning asks its history
// queries as tune --shard does (promql.HistoryRetries), not as a
// decision does (no retry: the next cycle asks again). One 503 from a
// restarting Prometheus failed the whole run before, tried again only 15
// minutes later.
func TestTuningAsksHistoryAgain(t *testing.T) {
	var fail atomic.Bool
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		if fail.CompareAndSwap(true, false) {
			w.Header().Set("Retry-After", "0")
			http.Error(w, "restarting", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1767607200,"5"]]}]}}`)
	}))
	t.Cleanup(srv.Close)
	src, err := NewPrometheusSourceFromRoundTripper(srv.URL, nil, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.File{Interval: prommodel.Duration(15 * time.Second), Prometheus: config.Prometheus{URL: srv.URL, Timeout: prommodel.Duration(10 * time.Second)}}
	tn := newTuning(prometheus.NewRegistry(), src, cfg, Options{}, slog.New(slog.DiscardHandler))
	if tn.API == nil || tn.API == src.Evaluator.API {
		t.Fatalf("tuning's client %v: want its own, beside the decisions' %v", tn.API, src.Evaluator.API)
	}
	at := time.Unix(1767607200, 0)
	ctx := context.Background()
	fail.Store(true)
	n0 := n.Load()
	if _, _, err := src.Evaluator.API.Range(ctx, "up", at, at, time.Minute); promql.ReasonOf(err) != promql.ReasonUnavailable || n.Load()-n0 != 1 {
		t.Errorf("the decisions' client, one 503: %v after %d requests; want unavailable after 1 (no retry)", err, n.Load()-n0)
	}
	fail.Store(true)
	n0 = n.Load()
	if m, _, err := tn.API.Range(ctx, "up", at, at, time.Minute); err != nil || len(m) != 1 || n.Load()-n0 != 2 {
		t.Errorf("tuning's client, one 503: %v, %v after %d requests; want the matrix after 2", m, err, n.Load()-n0)
	}
}
