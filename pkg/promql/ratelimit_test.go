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
// Requests is overloaded, not refusing the query, and so is one answering
// 401 or 403 (credentials) or 404 (a path a proxy lost while it
// reconfigures): the signal is unavailable (as a 503), the batch is not
// retried target by target (2 targets, so a bad_data retry would send 1 + 2
// queries per batch where the batch alone is 1; a 403 to the POST is asked
// again as GET, as client_golang does), and once the refusals stop the next
// cycle reads every target (a rejected target backed off for at least 30 s,
// up to 16 min after repeated refusals). 429 with and without Retry-After.
func TestRateLimitedIsUnavailable(t *testing.T) {
	for _, tc := range []struct {
		status     int
		retryAfter string
		says       [2]string // the error's start, and what it says to do
	}{
		{http.StatusTooManyRequests, "", [2]string{"promql: unavailable: client error: 429 Too Many Requests", "(Prometheus, or a proxy in front of it, limits the rate of queries; the signal is unknown until it answers: raise the limit for infscale, or query less often)"}},
		{http.StatusTooManyRequests, "30", [2]string{"promql: unavailable: client error: 429 Too Many Requests", "(Prometheus, or a proxy in front of it, limits the rate of queries; the signal is unknown until it answers: raise the limit for infscale, or query less often)"}},
		{http.StatusUnauthorized, "", [2]string{"promql: unavailable: client error: 401", "(Prometheus, or a proxy in front of it, refused infscale's credentials: check the prometheus block's authorization"}},
		{http.StatusForbidden, "", [2]string{"promql: unavailable: client error: 403", "(Prometheus, or a proxy in front of it, refused infscale's credentials: check the prometheus block's authorization"}},
		{http.StatusNotFound, "", [2]string{"promql: unavailable: client error: 404", "(nothing answers at the URL's /api/v1/: it is probably not a Prometheus API root, or its path prefix is wrong"}},
	} {
		retryAfter := tc.retryAfter
		t.Run(fmt.Sprintf("%d Retry-After %q", tc.status, retryAfter), func(t *testing.T) {
			var limited atomic.Bool
			limited.Store(true)
			c, n := fakeProm(t, func(w http.ResponseWriter, r *http.Request) {
				_ = r.ParseForm()
				if limited.Load() {
					if retryAfter != "" {
						w.Header().Set("Retry-After", retryAfter)
					}
					http.Error(w, http.StatusText(tc.status), tc.status)
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
				if err != nil && (!strings.HasPrefix(err.Error(), tc.says[0]) || !strings.Contains(err.Error(), tc.says[1])) {
					t.Errorf("target %d: error %q does not say %q", i, err, tc.says)
				}
			}
			perBatch := int64(1)
			if tc.status == http.StatusForbidden {
				perBatch = 2 // POST, then GET
			}
			if got := n.Load(); got != perBatch*int64(p.Queries()) || st.Queries != p.Queries() {
				t.Errorf("%d HTTP requests (%d counted), want %d: the batches once, no retry per target", got, st.Queries, perBatch*int64(p.Queries()))
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
