package promql

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/modelserver"
)

// TestServerErrorSaysPrometheusWords: a 5xx whose body is Prometheus's
// API error names its error in the query's error (and its errorType when
// it is not the reason already said: timeout is), one query
// at a time and batched alike (client_golang decodes bodies of 400 and
// 422 only: the line said "server error: 503" alone). A proxy's HTML page
// adds nothing, and an error of 1000 bytes is cut at 300.
func TestServerErrorSaysPrometheusWords(t *testing.T) {
	long := strings.Repeat("x", 1000)
	for _, tc := range []struct {
		name, body string
		status     int
		want       string // "" : no "Prometheus's error"
		reason     Reason
	}{
		{"503 query timeout", `{"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"}`, 503,
			"server error: 503 (Prometheus's error: query timed out in expression evaluation)", ReasonTimeout},
		{"500 internal", `{"status":"error","errorType":"internal","error":"TSDB not ready"}`, 500,
			"server error: 500 (Prometheus's error: internal: TSDB not ready)", ReasonUnavailable},
		{"502 proxy page", `<html>bad gateway</html>`, 502, "", ReasonUnavailable},
		{"500 long", `{"status":"error","errorType":"internal","error":"` + long + `"}`, 500,
			"(Prometheus's error: internal: " + long[:300] + "...)", ReasonUnavailable},
	} {
		for _, batch := range []int{1, 0} {
			c, _ := fakeProm(t, reply(tc.status, tc.body))
			tg := Target{Name: "chat", Server: modelserver.VLLM}
			tg.Selector, _ = ParseSelector(`{namespace="llm"}`)
			res, _ := (&Evaluator{API: c, BatchSize: batch}).Evaluate(context.Background(), []Target{tg}, time.Unix(1737152900, 0))
			err := res[0].Errors[Waiting]
			if err == nil || ReasonOf(err) != tc.reason {
				t.Fatalf("%s (batch %d): %v, want reason %v", tc.name, batch, err, tc.reason)
			}
			got := err.Error()
			if tc.want == "" && strings.Contains(got, "Prometheus's error") || tc.want != "" && !strings.Contains(got, tc.want) {
				t.Errorf("%s (batch %d): %q\nwant it to say %q", tc.name, batch, got, tc.want)
			}
		}
	}
}
