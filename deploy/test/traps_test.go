package deploytest

import (
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/recommend"
)

// The five traps of docs/hpa.md, asserted on every consumer shipped under
// deploy/ (KEDA ScaledObjects, HPAs, the prometheus-adapter rule):
//
//  1. tolerance: the HPA keeps 10 replicas when infscale says 11 (11/10 = 1.1
//     is inside the default 0.1 band) -> tolerance "0" both ways;
//  2. Value runs away -> AverageValue with threshold 1;
//  3. empty or NaN read as 0 -> ignoreNullValues "false" and a fallback;
//  4. several series -> the query's top node is max() (by target at most);
//  5. stacked stabilisation windows -> stabilizationWindowSeconds 0 both
//     ways and policies that never bind.

const desiredMetric = "infscale_desired_replicas"

// bundle is one kustomization's built output: its consumers, and the
// infscale configs (from ConfigMaps) they must agree with.
type bundle struct {
	dir     string
	scaled  []*kedav1alpha1.ScaledObject
	hpas    []*autoscalingv2.HorizontalPodAutoscaler
	adapter []*AdapterConfig
	configs []*config.File
}

// bundles builds every kustomization and sorts its objects. A bundle whose
// output has no infscale ConfigMap (deploy/keda, deploy/hpa: applied next to
// deploy/base) is checked against deploy/base's config.
func bundles(t *testing.T) []bundle {
	t.Helper()
	var base []*config.File
	var out []bundle
	for _, dir := range kustomizationDirs(t) {
		abs, _ := filepath.Abs(dir)
		m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), abs)
		if err != nil {
			t.Fatalf("kustomize build %s: %v", dir, err)
		}
		y, err := m.AsYaml()
		if err != nil {
			t.Fatal(err)
		}
		b := bundle{dir: filepath.Base(dir)}
		for _, d := range splitDocuments(t, "build:"+b.dir, y) {
			obj, err := decodeStrict(d)
			if err != nil {
				t.Fatalf("%s: %v", d, err)
			}
			switch o := obj.(type) {
			case *kedav1alpha1.ScaledObject:
				b.scaled = append(b.scaled, o)
			case *autoscalingv2.HorizontalPodAutoscaler:
				b.hpas = append(b.hpas, o)
			case *corev1.ConfigMap:
				for key, body := range o.Data {
					switch {
					case strings.Contains(body, "externalRules:"):
						var ac AdapterConfig
						if err := yaml.UnmarshalStrict([]byte(body), &ac); err != nil {
							t.Fatalf("%s data %s: prometheus-adapter config: %v", d, key, err)
						}
						b.adapter = append(b.adapter, &ac)
					case strings.Contains(body, "targets:"):
						f, err := config.Parse([]byte(body), d.String()+"#"+key)
						if err != nil {
							t.Fatalf("%s data %s: infscale config:\n%v", d, key, err)
						}
						if len(f.Deprecations) > 0 {
							t.Errorf("%s data %s: infscale config uses deprecated keys:\n%v", d, key, config.Errors(f.Deprecations))
						}
						b.configs = append(b.configs, f)
					}
				}
			}
		}
		if b.dir == "base" {
			base = b.configs
		}
		out = append(out, b)
	}
	if len(base) == 0 {
		t.Fatal("deploy/base ships no infscale config")
	}
	for i := range out {
		if len(out[i].configs) == 0 {
			out[i].configs = base
		}
	}
	return out
}

// target returns the config's target of that name.
func (b bundle) target(t *testing.T, name string) config.Target {
	t.Helper()
	for _, f := range b.configs {
		for _, tg := range f.Targets {
			if tg.Name == name {
				return tg
			}
		}
	}
	t.Fatalf("%s: target %q is in no infscale config of the bundle", b.dir, name)
	return config.Target{}
}

func TestKEDAScaledObjects(t *testing.T) {
	n := 0
	for _, b := range bundles(t) {
		for _, so := range b.scaled {
			n++
			name := b.dir + "/" + so.Name
			t.Run(name, func(t *testing.T) {
				// KEDA's own validations (those that need no cluster).
				if err := kedav1alpha1.ValidateTriggers(so.Spec.Triggers); err != nil {
					t.Errorf("KEDA ValidateTriggers: %v", err)
				}
				if err := kedav1alpha1.CheckReplicaCountBoundsAreValid(so); err != nil {
					t.Errorf("KEDA CheckReplicaCountBoundsAreValid: %v", err)
				}
				if err := kedav1alpha1.CheckFallbackValid(so); err != nil {
					t.Errorf("KEDA CheckFallbackValid: %v", err)
				}
				if len(so.Spec.Triggers) != 1 {
					t.Fatalf("want exactly one trigger (infscale's decision), have %d", len(so.Spec.Triggers))
				}
				tr := so.Spec.Triggers[0]
				if tr.Type != "prometheus" {
					t.Fatalf("trigger type %q, want prometheus", tr.Type)
				}
				// Trap 2.
				if tr.MetricType != autoscalingv2.AverageValueMetricType {
					t.Errorf("metricType %q, want AverageValue (Value multiplies by the ready pods)", tr.MetricType)
				}
				if got := tr.Metadata["threshold"]; got != "1" {
					t.Errorf("threshold %q, want \"1\" (one replica per unit of infscale_desired_replicas)", got)
				}
				// Trap 3.
				if got := tr.Metadata["ignoreNullValues"]; got != "false" {
					t.Errorf("ignoreNullValues %q, want \"false\": KEDA's default reads an empty or NaN result as 0", got)
				}
				if so.Spec.Fallback == nil || so.Spec.Fallback.FailureThreshold < 1 {
					t.Errorf("fallback %+v: want one with failureThreshold >= 1, so an empty result holds replicas instead of failing", so.Spec.Fallback)
				} else if so.Spec.Fallback.Behavior != kedav1alpha1.FallbackBehaviorCurrentReplicas {
					t.Errorf("fallback behavior %q, want currentReplicas (what infscale does when it knows nothing)", so.Spec.Fallback.Behavior)
				}
				if tr.Metadata["serverAddress"] == "" {
					t.Error("no serverAddress")
				}
				// Trap 4.
				target := singleSeriesQuery(t, tr.Metadata["query"], nil)
				// Another installation the same Prometheus scrapes (the chart
				// in another namespace) exports target chat too: the query
				// names deploy/base's by the labels its ServiceMonitor gives,
				// its namespace and Service, both infscale.
				if ms := equalMatchers(t, tr.Metadata["query"]); ms["namespace"] != "infscale" || ms["service"] != "infscale" {
					t.Errorf("query %q: want namespace=\"infscale\" and service=\"infscale\" matchers (deploy/base's installation), have %v", tr.Metadata["query"], ms)
				}
				tg := b.target(t, target)
				if role := roleOf(t, tr.Metadata["query"]); role != 0 {
					// A P/D target's pool: its bounds are the role's.
					rt, ok := tg.RoleTarget(role)
					if !ok {
						t.Fatalf("query %q: target %s has no role %s", tr.Metadata["query"], target, role)
					}
					tg = rt
				}
				// Bounds: KEDA's must equal infscale's, or one clamps the other.
				min, max := 1, 0
				if tg.Min != nil {
					min = *tg.Min
				}
				if tg.Max != nil {
					max = *tg.Max
				}
				if so.Spec.MinReplicaCount == nil || int(*so.Spec.MinReplicaCount) != min {
					t.Errorf("minReplicaCount %v, want %d (target %s's min)", ptrString(so.Spec.MinReplicaCount), min, target)
				}
				if so.Spec.MaxReplicaCount == nil || int(*so.Spec.MaxReplicaCount) != max {
					t.Errorf("maxReplicaCount %v, want %d (target %s's max)", ptrString(so.Spec.MaxReplicaCount), max, target)
				}
				if min == 0 {
					// Scale to zero: KEDA activates above activationThreshold;
					// infscale exports >= 1 as soon as a request is held.
					if got := tr.Metadata["activationThreshold"]; got != "0" {
						t.Errorf("activationThreshold %q, want \"0\" with minReplicaCount 0", got)
					}
					// The held count: a query, or the llm-d EPP's flow-control
					// queue (zero.flow_control, built by infscale).
					if tg.Zero == nil || (tg.Zero.Held == "" && !tg.Zero.FlowControl) {
						t.Errorf("minReplicaCount 0 but target %s has no zero.held query nor zero.flow_control", target)
					}
					if tg.Zero != nil && tg.Zero.Held != "" {
						checkHeld(t, tg.Zero.Held)
					}
				}
				// Traps 1 and 5.
				if so.Spec.Advanced == nil || so.Spec.Advanced.HorizontalPodAutoscalerConfig == nil {
					t.Fatal("no advanced.horizontalPodAutoscalerConfig.behavior: the HPA defaults add a 300 s scale-down window and the 10% tolerance")
				}
				checkPassThrough(t, so.Spec.Advanced.HorizontalPodAutoscalerConfig.Behavior, int32(min), int32(max))
			})
		}
	}
	if n == 0 {
		t.Fatal("no ScaledObject shipped")
	}
}

func TestHPAs(t *testing.T) {
	n := 0
	for _, b := range bundles(t) {
		for _, h := range b.hpas {
			n++
			t.Run(b.dir+"/"+h.Name, func(t *testing.T) {
				if len(h.Spec.Metrics) != 1 {
					t.Fatalf("want exactly one metric (infscale's decision), have %d", len(h.Spec.Metrics))
				}
				m := h.Spec.Metrics[0]
				if m.Type != autoscalingv2.ExternalMetricSourceType || m.External == nil {
					t.Fatalf("metric type %q, want External", m.Type)
				}
				if m.External.Metric.Name != desiredMetric {
					t.Errorf("metric %q, want %s", m.External.Metric.Name, desiredMetric)
				}
				// Trap 2.
				tgt := m.External.Target
				if tgt.Type != autoscalingv2.AverageValueMetricType || tgt.AverageValue == nil || tgt.AverageValue.Cmp(mustQuantity(t, "1")) != 0 {
					t.Errorf("target %+v, want type AverageValue, averageValue 1 (never Value)", tgt)
				}
				if tgt.Value != nil {
					t.Error("target.value set: Value multiplies by the ready pods and runs away")
				}
				sel := m.External.Metric.Selector
				if sel == nil || sel.MatchLabels["target"] == "" {
					t.Fatal("metric.selector.matchLabels.target missing: every target's series would be summed")
				}
				if sel.MatchLabels["namespace"] != "infscale" || sel.MatchLabels["service"] != "infscale" {
					t.Errorf("metric.selector.matchLabels %v: want namespace: infscale and service: infscale (deploy/base's installation; another exports target %s too)", sel.MatchLabels, sel.MatchLabels["target"])
				}
				tg := b.target(t, sel.MatchLabels["target"])
				if tg.Min != nil && h.Spec.MinReplicas != nil && int(*h.Spec.MinReplicas) != *tg.Min {
					t.Errorf("minReplicas %d, want %d", *h.Spec.MinReplicas, *tg.Min)
				}
				if tg.Max != nil && int(h.Spec.MaxReplicas) != *tg.Max {
					t.Errorf("maxReplicas %d, want %d", h.Spec.MaxReplicas, *tg.Max)
				}
				min := int32(1)
				if h.Spec.MinReplicas != nil {
					min = *h.Spec.MinReplicas
				}
				// Traps 1 and 5.
				checkPassThrough(t, h.Spec.Behavior, min, h.Spec.MaxReplicas)
			})
		}
		// Trap 4 on the adapter side: the rule serving the metric returns
		// one series per target.
		for _, ac := range b.adapter {
			served := false
			for _, r := range ac.ExternalRules {
				if r.Name.As != desiredMetric {
					continue
				}
				served = true
				if _, err := parser.NewParser(parser.Options{}).ParseMetricSelector(r.SeriesQuery); err != nil {
					t.Errorf("%s: adapter seriesQuery %q: %v", b.dir, r.SeriesQuery, err)
				}
				if r.Resources.Namespaced == nil || *r.Resources.Namespaced {
					t.Errorf("%s: adapter rule resources.namespaced must be false: infscale's series carry infscale's namespace, not the HPA's", b.dir)
				}
				q := strings.NewReplacer("<<.Series>>", desiredMetric, "<<.LabelMatchers>>", `target="chat"`).Replace(r.MetricsQuery)
				singleSeriesQuery(t, q, []string{"target"})
			}
			if !served {
				t.Errorf("%s: prometheus-adapter config serves no %s", b.dir, desiredMetric)
			}
		}
	}
	if n == 0 {
		t.Fatal("no HorizontalPodAutoscaler shipped")
	}
}

// singleSeriesQuery asserts the query's top node is max(...) grouped by at
// most the labels allowed (so it returns one series per target), over
// infscale_desired_replicas with an equality matcher on target, and returns
// that target.
// checkHeld rejects the interceptor metrics that add-on v0.14 removed or that
// never existed, and the double count: interceptor_request_concurrency
// includes requests in flight upstream (already in running + waiting), so a
// held query on it must be gated on the Deployment having no available
// replica.
func checkHeld(t *testing.T, held string) {
	t.Helper()
	for _, gone := range []string{"interceptor_pending_request_count", "interceptor_pending_requests", "keda_http_pending_requests"} {
		if strings.Contains(held, gone) {
			t.Errorf("zero.held reads %s, which the HTTP add-on does not export (>= v0.14: interceptor_request_concurrency)", gone)
		}
	}
	if strings.Contains(held, "interceptor_request_concurrency") && !strings.Contains(held, "kube_deployment_status_replicas_available") {
		t.Errorf("zero.held %q adds the interceptor's in-flight count to running + waiting: gate it on no available replica", held)
	}
}

func singleSeriesQuery(t *testing.T, q string, allowedGrouping []string) string {
	t.Helper()
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(q)
	if err != nil {
		t.Fatalf("query %q: %v", q, err)
	}
	agg, ok := expr.(*parser.AggregateExpr)
	if !ok || agg.Op != parser.MAX || agg.Without {
		t.Fatalf("query %q: top node must be max(...) so several copies (HA exporters, an HA Prometheus pair) make one series", q)
	}
	for _, l := range agg.Grouping {
		if !contains(allowedGrouping, l) {
			t.Errorf("query %q: grouping by %q can return several series", q, l)
		}
	}
	var target string
	parser.Inspect(agg.Expr, func(n parser.Node, _ []parser.Node) error {
		vs, ok := n.(*parser.VectorSelector)
		if !ok {
			return nil
		}
		if vs.Name != desiredMetric {
			t.Errorf("query %q selects %q, want %s", q, vs.Name, desiredMetric)
		}
		for _, m := range vs.LabelMatchers {
			if m.Name == "target" && m.Type == labels.MatchEqual {
				target = m.Value
			}
		}
		return nil
	})
	if target == "" {
		t.Fatalf("query %q: no target=\"...\" matcher", q)
	}
	return target
}

// equalMatchers is the name=value of each equality matcher of q's
// selectors.
func equalMatchers(t *testing.T, q string) map[string]string {
	t.Helper()
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(q)
	if err != nil {
		t.Fatalf("query %q: %v", q, err)
	}
	out := map[string]string{}
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			for _, m := range vs.LabelMatchers {
				if m.Type == labels.MatchEqual && m.Name != labels.MetricName {
					out[m.Name] = m.Value
				}
			}
		}
		return nil
	})
	return out
}

// roleOf is the role="..." matcher of q's selector (a P/D target's pool,
// docs/llm-d.md), 0 when it has none.
func roleOf(t *testing.T, q string) recommend.Role {
	t.Helper()
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(q)
	if err != nil {
		t.Fatalf("query %q: %v", q, err)
	}
	var role recommend.Role
	parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			for _, m := range vs.LabelMatchers {
				if m.Name != "role" {
					continue
				}
				switch {
				case m.Type == labels.MatchEqual && m.Value == recommend.RolePrefill.String():
					role = recommend.RolePrefill
				case m.Type == labels.MatchEqual && m.Value == recommend.RoleDecode.String():
					role = recommend.RoleDecode
				default:
					t.Errorf("query %q: role matcher %s: want role=\"prefill\" or role=\"decode\"", q, m)
				}
			}
		}
		return nil
	})
	return role
}

// checkPassThrough asserts the HPA behavior applies infscale's decision as
// is: no tolerance band, no stabilisation window, and rate-limit policies
// that allow any change between min and max within one period. The HPA's
// limits (pkg/controller/podautoscaler/horizontal.go) from c replicas are
// c + value (Pods) and ceil(c x (1 + value/100)) (Percent) going up,
// c - value and c x (1 - value/100) going down; selectPolicy Max takes the
// most permissive. For every c in [max(min,1), max] the up limit must reach
// max and the down limit reach min.
func checkPassThrough(t *testing.T, b *autoscalingv2.HorizontalPodAutoscalerBehavior, min, max int32) {
	t.Helper()
	if b == nil || b.ScaleUp == nil || b.ScaleDown == nil {
		t.Fatal("behavior.scaleUp and behavior.scaleDown must both be set: the HPA's defaults stabilise scale-down for 300 s on top of infscale's window")
	}
	for dir, r := range map[string]*autoscalingv2.HPAScalingRules{"scaleUp": b.ScaleUp, "scaleDown": b.ScaleDown} {
		if r.StabilizationWindowSeconds == nil || *r.StabilizationWindowSeconds != 0 {
			t.Errorf("%s.stabilizationWindowSeconds %v, want 0: infscale already stabilises (trap 5)", dir, ptrString(r.StabilizationWindowSeconds))
		}
		if r.Tolerance == nil || !r.Tolerance.IsZero() {
			t.Errorf("%s.tolerance %v, want \"0\": with the default 0.1 a step of 1 at 10 replicas (11/10 = 1.1) is swallowed (trap 1)", dir, r.Tolerance)
		}
		if r.SelectPolicy != nil && *r.SelectPolicy != autoscalingv2.MaxChangePolicySelect {
			t.Errorf("%s.selectPolicy %s, want Max (the most permissive policy)", dir, *r.SelectPolicy)
		}
		if len(r.Policies) == 0 {
			t.Errorf("%s.policies empty: the HPA defaults apply (scale-up: 4 pods or 100%% per 15 s)", dir)
		}
		for _, p := range r.Policies {
			if p.PeriodSeconds > 15 {
				t.Errorf("%s policy %+v: period longer than infscale's 15 s interval", dir, p)
			}
		}
	}
	for c := int32(math.Max(float64(min), 1)); c <= max; c++ {
		up, down := int32(math.MinInt32), int32(math.MaxInt32)
		for _, p := range b.ScaleUp.Policies {
			var l int32
			switch p.Type {
			case autoscalingv2.PodsScalingPolicy:
				l = c + p.Value
			case autoscalingv2.PercentScalingPolicy:
				l = int32(math.Ceil(float64(c) * (1 + float64(p.Value)/100)))
			}
			up = int32(math.Max(float64(up), float64(l)))
		}
		for _, p := range b.ScaleDown.Policies {
			var l int32
			switch p.Type {
			case autoscalingv2.PodsScalingPolicy:
				l = c - p.Value
			case autoscalingv2.PercentScalingPolicy:
				l = int32(float64(c) * (1 - float64(p.Value)/100))
			}
			down = int32(math.Min(float64(down), float64(l)))
		}
		if up < max {
			t.Errorf("from %d replicas the scale-up policies allow only %d in one period, want >= max %d", c, up, max)
		}
		if down > min {
			t.Errorf("from %d replicas the scale-down policies allow only %d in one period, want <= min %d", c, down, min)
		}
	}
}

// TestNoRBAC asserts nothing under deploy/ asks for Kubernetes API access
// but deploy/llm-d/pool (an InferencePool target read by serve itself,
// with the ClusterRole the EPP's metrics authentication checks):
// infscale reads Prometheus over HTTP only (current replicas come from
// kube-state-metrics through Prometheus), so its pod mounts no token. The
// pool overlay's Role grants exactly what pkg/kube calls for its target
// (docs/kubernetes.md, "RBAC per mode": apply, the InferencePool, its EPP
// Service), in the workload's namespace, bound to infscale's account.
func TestNoRBAC(t *testing.T) {
	pool := filepath.Join(deployDir, "llm-d", "pool", "rbac.yaml")
	for _, f := range manifestFiles(t) {
		for _, d := range readDocuments(t, f) {
			switch d.meta.Kind {
			case "ServiceAccount", "Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding":
				if f != pool {
					t.Errorf("%s: infscale needs no RBAC", d)
				}
			}
		}
	}
	var got []string
	kinds := map[string]int{}
	for _, d := range readDocuments(t, pool) {
		kinds[d.meta.Kind]++
		obj, err := decodeStrict(d)
		if err != nil {
			t.Fatal(err)
		}
		switch o := obj.(type) {
		case *rbacv1.Role:
			for _, r := range o.Rules {
				got = append(got, fmt.Sprintf("%s %v %v %v", o.Namespace, r.APIGroups, r.Resources, r.Verbs))
			}
		case *rbacv1.RoleBinding:
			if o.Namespace != "llm" || o.RoleRef.Kind != "Role" || o.RoleRef.Name != "infscale" || len(o.Subjects) != 1 ||
				o.Subjects[0].Kind != "ServiceAccount" || o.Subjects[0].Name != "infscale" || o.Subjects[0].Namespace != "infscale" {
				t.Errorf("RoleBinding %+v: want Role llm/infscale bound to ServiceAccount infscale/infscale", o)
			}
		case *rbacv1.ClusterRole:
			// The EPP's metrics authentication: get on /metrics, nothing else.
			if len(o.Rules) != 1 || !reflect.DeepEqual(o.Rules[0], rbacv1.PolicyRule{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}) {
				t.Errorf("ClusterRole %s rules %+v: want get on the non-resource URL /metrics alone", o.Name, o.Rules)
			}
		case *rbacv1.ClusterRoleBinding:
			if o.RoleRef.Kind != "ClusterRole" || o.RoleRef.Name != "infscale-metrics-reader" || len(o.Subjects) != 1 ||
				o.Subjects[0].Kind != "ServiceAccount" || o.Subjects[0].Name != "infscale" || o.Subjects[0].Namespace != "infscale" {
				t.Errorf("ClusterRoleBinding %+v: want ClusterRole infscale-metrics-reader bound to ServiceAccount infscale/infscale", o)
			}
		}
	}
	want := []string{
		"llm [apps] [deployments/scale] [get update]",
		"llm [] [pods] [list watch]",
		"llm [autoscaling] [horizontalpodautoscalers] [list watch]",
		"llm [inference.networking.k8s.io] [inferencepools] [get]",
		"llm [] [services] [get]",
	}
	if !reflect.DeepEqual(got, want) || len(kinds) != 5 || kinds["ServiceAccount"] != 1 || kinds["Role"] != 1 || kinds["RoleBinding"] != 1 || kinds["ClusterRole"] != 1 || kinds["ClusterRoleBinding"] != 1 {
		t.Errorf("%s: kinds %v, rules\n %q\nwant one ServiceAccount, Role, RoleBinding, ClusterRole (/metrics), ClusterRoleBinding and\n %q", pool, kinds, got, want)
	}
	// Built, serve runs as that account with its token mounted.
	abs, _ := filepath.Abs(filepath.Dir(pool))
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), abs)
	if err != nil {
		t.Fatal(err)
	}
	y, err := m.AsYaml()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, d := range splitDocuments(t, "build:pool", y) {
		if obj, err := decodeStrict(d); err == nil {
			if dep, ok := obj.(*appsv1.Deployment); ok && dep.Name == "infscale" {
				ps := dep.Spec.Template.Spec
				found = ps.ServiceAccountName == "infscale" && ps.AutomountServiceAccountToken != nil && *ps.AutomountServiceAccountToken && dep.Namespace == "infscale"
			}
		}
	}
	if !found {
		t.Errorf("kustomize build %s: want Deployment infscale/infscale as ServiceAccount infscale with its token mounted", filepath.Dir(pool))
	}
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func ptrString[T any](p *T) any {
	if p == nil {
		return "unset"
	}
	return *p
}

func mustQuantity(t *testing.T, s string) resource.Quantity {
	t.Helper()
	q, err := resource.ParseQuantity(s)
	if err != nil {
		t.Fatal(err)
	}
	return q
}
