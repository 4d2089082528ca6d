package deploytest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/infscale/infscale/internal/promtest"
)

// TestZeroHeldQuery evaluates deploy/zero's zero.held in the pinned
// promtool. interceptor_request_concurrency counts every request in flight
// through the interceptor, upstream ones too, so the query must give it only
// while chat has no available replica, 0 once one is available (running +
// waiting count those), and nothing (unknown) at zero replicas before the
// interceptor has a series. Expected values by hand, minute by minute:
//
//	minute  available  chat's gauge  code's gauge  held
//	0       0          absent        7             empty (unknown)
//	1       0          3             7             3 (all held)
//	2       1          5             7             0 (upstream: running + waiting)
//	3       2          0             7             0
func TestZeroHeldQuery(t *testing.T) {
	var held string
	for _, b := range bundles(t) {
		if b.dir == "zero" {
			tg := b.target(t, "chat")
			if tg.Zero == nil {
				t.Fatal("deploy/zero: target chat has no zero block")
			}
			held = tg.Zero.Held
		}
	}
	if held == "" {
		t.Fatal("deploy/zero: no zero.held query found")
	}
	promtool := promtest.Binary(t, promtest.Promtool)
	expr := strings.Join(strings.Fields(held), " ")
	test := `rule_files: []
evaluation_interval: 1m
tests:
- interval: 1m
  input_series:
  - series: 'kube_deployment_status_replicas_available{namespace="llm",deployment="chat"}'
    values: '0 0 1 2'
  - series: 'interceptor_request_concurrency{route_namespace="llm",route_name="chat"}'
    values: '_ 3 5 0'
  - series: 'interceptor_request_concurrency{route_namespace="llm",route_name="code"}'
    values: '7 7 7 7'
  promql_expr_test:
  - {expr: '` + expr + `', eval_time: 0m, exp_samples: []}
  - {expr: '` + expr + `', eval_time: 1m, exp_samples: [{labels: '{}', value: 3}]}
  - {expr: '` + expr + `', eval_time: 2m, exp_samples: [{labels: '{}', value: 0}]}
  - {expr: '` + expr + `', eval_time: 3m, exp_samples: [{labels: '{}', value: 0}]}
`
	if strings.Contains(expr, "'") {
		t.Fatalf("zero.held %q has a single quote; the test quotes it with single quotes", expr)
	}
	f := filepath.Join(t.TempDir(), "held.test.yml")
	if err := os.WriteFile(f, []byte(test), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "test", "rules", f).CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s\n%s", err, out, test)
	}
}
