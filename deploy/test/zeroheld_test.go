package deploytest

import (
	"fmt"
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
	held := bundleHeld(t, "zero")
	promtoolTest(t, held, `
  - series: 'kube_deployment_status_replicas_available{namespace="llm",deployment="chat"}'
    values: '0 0 1 2'
  - series: 'interceptor_request_concurrency{route_namespace="llm",route_name="chat"}'
    values: '_ 3 5 0'
  - series: 'interceptor_request_concurrency{route_namespace="llm",route_name="code"}'
    values: '7 7 7 7'`, "[]", "3", "0", "0")
}

// TestZeroHeldQueryHA: the same minutes read through an HA Prometheus pair
// queried without deduplication (Thanos without --query.replica-label,
// Mimir or federation of both replicas): every series comes back twice,
// differing only in the Prometheus Operator's replica label. The held count
// is the same as from one Prometheus: 3 at minute 1, not 6 (each copy of the
// interceptor's gauge added).
func TestZeroHeldQueryHA(t *testing.T) {
	held := bundleHeld(t, "zero")
	var in strings.Builder
	for _, r := range []string{"prometheus-k8s-0", "prometheus-k8s-1"} {
		fmt.Fprintf(&in, `
  - series: 'kube_deployment_status_replicas_available{namespace="llm",deployment="chat",prometheus="monitoring/k8s",prometheus_replica="%[1]s"}'
    values: '0 0 1 2'
  - series: 'interceptor_request_concurrency{route_namespace="llm",route_name="chat",prometheus="monitoring/k8s",prometheus_replica="%[1]s"}'
    values: '_ 3 5 0'
  - series: 'interceptor_request_concurrency{route_namespace="llm",route_name="code",prometheus="monitoring/k8s",prometheus_replica="%[1]s"}'
    values: '7 7 7 7'`, r)
	}
	promtoolTest(t, held, in.String(), "[]", "3", "0", "0")
}

// TestActivatorHeldQueryHA evaluates deploy/activator's zero.held: two
// activators behind the activator-chat Service (a rollout's surge, or more
// than one replica) hold 3 and 2 requests, a third activator in front of
// another Service holds 7, and an HA Prometheus pair queried without
// deduplication returns every series twice (prometheus_replica 0 and 1).
// By hand: 3 + 2 = 5 held for chat at every minute; the other Service's 7
// and the second copy of each series are not counted (a plain sum read 10).
// At minute 2 the first activator is gone (a staleness marker: its pod
// deleted) and the second holds 4: 4.
func TestActivatorHeldQueryHA(t *testing.T) {
	held := bundleHeld(t, "activator")
	var in strings.Builder
	for _, r := range []string{"prometheus-k8s-0", "prometheus-k8s-1"} {
		fmt.Fprintf(&in, `
  - series: 'infscale_activator_held_requests{namespace="llm",service="activator-chat",pod="activator-chat-a",instance="10.0.0.1:9090",job="activator-chat",prometheus="monitoring/k8s",prometheus_replica="%[1]s"}'
    values: '3 3 stale'
  - series: 'infscale_activator_held_requests{namespace="llm",service="activator-chat",pod="activator-chat-b",instance="10.0.0.2:9090",job="activator-chat",prometheus="monitoring/k8s",prometheus_replica="%[1]s"}'
    values: '2 2 4'
  - series: 'infscale_activator_held_requests{namespace="llm",service="activator-code",pod="activator-code-a",instance="10.0.0.3:9090",job="activator-code",prometheus="monitoring/k8s",prometheus_replica="%[1]s"}'
    values: '7 7 7'`, r)
	}
	promtoolTest(t, held, in.String(), "5", "5", "4")
}

// bundleHeld is the zero.held query of target chat in deploy/<dir>.
func bundleHeld(t *testing.T, dir string) string {
	t.Helper()
	for _, b := range bundles(t) {
		if b.dir == dir {
			tg := b.target(t, "chat")
			if tg.Zero == nil || tg.Zero.Held == "" {
				t.Fatalf("deploy/%s: target chat has no zero.held", dir)
			}
			return tg.Zero.Held
		}
	}
	t.Fatalf("no deploy/%s bundle", dir)
	return ""
}

// promtoolTest evaluates held in the pinned promtool over the input series
// (one a minute) at minute 0, 1, ...: want[i] is the value at minute i, a
// single sample without labels, or "[]" for an empty result.
func promtoolTest(t *testing.T, held, series string, want ...string) {
	t.Helper()
	promtool := promtest.Binary(t, promtest.Promtool)
	expr := strings.Join(strings.Fields(held), " ")
	var evals strings.Builder
	for i, w := range want {
		if w == "[]" {
			fmt.Fprintf(&evals, "  - {expr: '%s', eval_time: %dm, exp_samples: []}\n", expr, i)
		} else {
			fmt.Fprintf(&evals, "  - {expr: '%s', eval_time: %dm, exp_samples: [{labels: '{}', value: %s}]}\n", expr, i, w)
		}
	}
	test := `rule_files: []
evaluation_interval: 1m
tests:
- interval: 1m
  input_series:` + series + `
  promql_expr_test:
` + evals.String()
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
