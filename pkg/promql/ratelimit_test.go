package promql

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A Prometheus (or the proxy in front of it) answering 429 Too Many
// Requests is overloaded, not refusing the query: the signal is unavailable
// (as a 503), the batch is not retried target by target (2 targets, so a
// bad_data retry would send 1 + 2 queries per batch where the batch alone is
// 1), and once the 429s stop the next cycle reads every target (a rejected
// target would back off for at least 30 s). With and without Retry-After.
func TestRateLimitedIsUnavailable(t *testing.T) {
	for _, retryAfter := range []string{"", "30"} {
		t.Run("Retry-After "+retryAfter, func(t *testing.T) {
			var limited atomic.Bool
			limited.Store(true)
			c, n := fakeProm(t, func(w http.ResponseWriter, r *http.Request) {
				_ = r.ParseForm()
				if limited.Load() {
					if retryAfter != "" {
						w.Header().Set("Retry-After", retryAfter)
					}
					http.Error(w, "Too Many Requests", http.StatusTooManyRequests)
					return
				}
				w.Header().Set("Content-Type", "application/json")
				if strings.Contains(r.Form.Get("query"), "label_replace(") {
					fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[`+
						`{"metric":{"infscale_target":"0"},"value":[1737152900,"3"]},{"metric":{"infscale_target":"1"},"value":[1737152900,"3"]}]}}`)
					return
				}
				fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1737152900,"3"]}]}}`)
			})
			ts := fallbackTargets(t, 2)
			p := NewPlan(ts, Options{}, 0)
			e := &Evaluator{API: c}
			at := time.Unix(1737152900, 0)
			res, st := e.Run(context.Background(), p, at)
			for i, r := range res {
				err := r.Errors[Running]
				if ReasonOf(err) != ReasonUnavailable {
					t.Errorf("target %d: running error %v, want unavailable", i, err)
				}
				if err != nil && !strings.Contains(err.Error(), "promql: unavailable: client error: 429 Too Many Requests (Prometheus, or a proxy in front of it, limits the rate of queries") {
					t.Errorf("target %d: error %q does not say what a 429 is", i, err)
				}
			}
			if got := n.Load(); got != int64(p.Queries()) || st.Queries != p.Queries() {
				t.Errorf("%d HTTP requests (%d counted), want %d: the batches once, no retry per target", got, st.Queries, p.Queries())
			}
			limited.Store(false)
			res, _ = e.Run(context.Background(), p, at.Add(15*time.Second))
			for i, r := range res {
				if r.Values[Running] != 3 || r.Errors[Running] != nil {
					t.Errorf("target %d after the 429s: running %v (%v), want 3", i, r.Values[Running], r.Errors[Running])
				}
			}
		})
	}
}
