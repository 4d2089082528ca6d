package charttest

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/infscale/infscale/pkg/config"
)

const chartDir = "../chart/infscale"

// object is one rendered document, decoded strictly into its owner's type.
type object struct {
	source string // template file and document index
	meta   metav1.TypeMeta
	obj    any
}

// render renders the chart as `helm template infscale -n infscale -f
// values` does, with values (YAML, "" for the defaults) over values.yaml,
// and decodes every document strictly.
func render(t *testing.T, values string) []object {
	t.Helper()
	objs, err := tryRender(values)
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func tryRender(values string) ([]object, error) {
	return tryRenderRelease("infscale", values)
}

// tryRenderRelease is tryRender for the release name given. Hook objects
// (a helm.sh/hook annotation: the config check) are left out, as Helm
// installs them apart from the release's objects; renderHooks has them.
func tryRenderRelease(release, values string) ([]object, error) {
	objs, _, err := renderSplit(release, values)
	return objs, err
}

// renderHooks renders values (as render) and returns the hook objects.
func renderHooks(t *testing.T, values string) []object {
	t.Helper()
	_, hooks, err := renderSplit("infscale", values)
	if err != nil {
		t.Fatal(err)
	}
	return hooks
}

// renderSplit renders the chart and decodes every document strictly,
// returning the release's objects and the hooks apart.
func renderSplit(release, values string) (objs, hooks []object, err error) {
	return renderSplitIn("infscale", release, values)
}

// renderSplitIn is renderSplit for a release in namespace ns (helm -n ns).
func renderSplitIn(ns, release, values string) (objs, hooks []object, err error) {
	ch, err := loader.Load(chartDir)
	if err != nil {
		return nil, nil, err
	}
	over, err := chartutil.ReadValues([]byte(values))
	if err != nil {
		return nil, nil, err
	}
	rv, err := chartutil.ToRenderValues(ch, over, chartutil.ReleaseOptions{
		Name: release, Namespace: ns, Revision: 1, IsInstall: true,
	}, chartutil.DefaultCapabilities)
	if err != nil {
		return nil, nil, err
	}
	files, err := engine.Render(ch, rv)
	if err != nil {
		return nil, nil, err
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if !strings.HasSuffix(n, ".yaml") {
			continue
		}
		for i, doc := range strings.Split("\n"+files[n], "\n---") {
			if strings.TrimSpace(stripComments(doc)) == "" {
				continue
			}
			o := object{source: fmt.Sprintf("%s#%d", n, i)}
			if err := yaml.Unmarshal([]byte(doc), &o.meta); err != nil {
				return nil, nil, fmt.Errorf("%s: %v\n%s", o.source, err, doc)
			}
			var m struct {
				Metadata metav1.ObjectMeta `json:"metadata"`
			}
			if err := yaml.Unmarshal([]byte(doc), &m); err != nil {
				return nil, nil, fmt.Errorf("%s: %v\n%s", o.source, err, doc)
			}
			o.obj = newObject(o.meta)
			if o.obj == nil {
				return nil, nil, fmt.Errorf("%s: no Go type known for apiVersion %q kind %q", o.source, o.meta.APIVersion, o.meta.Kind)
			}
			if err := yaml.UnmarshalStrict([]byte(doc), o.obj); err != nil {
				return nil, nil, fmt.Errorf("%s: %v\n%s", o.source, err, doc)
			}
			if _, ok := m.Metadata.Annotations["helm.sh/hook"]; ok {
				hooks = append(hooks, o)
			} else {
				objs = append(objs, o)
			}
		}
	}
	return objs, hooks, nil
}

func stripComments(s string) string {
	var b strings.Builder
	for _, l := range strings.Split(s, "\n") {
		if !strings.HasPrefix(strings.TrimSpace(l), "#") {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

// newObject is an empty value of the type that owns apiVersion/kind, nil
// when none is known (a failure: every rendered kind must be checked).
func newObject(m metav1.TypeMeta) any {
	switch m.APIVersion + " " + m.Kind {
	case "v1 ConfigMap":
		return &corev1.ConfigMap{}
	case "v1 Service":
		return &corev1.Service{}
	case "v1 ServiceAccount":
		return &corev1.ServiceAccount{}
	case "apps/v1 Deployment":
		return &appsv1.Deployment{}
	case "rbac.authorization.k8s.io/v1 Role":
		return &rbacv1.Role{}
	case "rbac.authorization.k8s.io/v1 RoleBinding":
		return &rbacv1.RoleBinding{}
	case "keda.sh/v1alpha1 ScaledObject":
		return &kedav1alpha1.ScaledObject{}
	case "monitoring.coreos.com/v1 ServiceMonitor":
		return &monitoringv1.ServiceMonitor{}
	case "batch/v1 CronJob":
		return &batchv1.CronJob{}
	case "batch/v1 Job":
		return &batchv1.Job{}
	case "monitoring.coreos.com/v1 PodMonitor":
		return &monitoringv1.PodMonitor{}
	case "policy/v1 PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}
	case "monitoring.coreos.com/v1 PrometheusRule":
		return &monitoringv1.PrometheusRule{}
	}
	return nil
}

// only returns the single rendered object of type T.
func only[T any](t *testing.T, objs []object) T {
	t.Helper()
	all := every[T](objs)
	if len(all) != 1 {
		t.Fatalf("%d objects of type %T rendered, want 1", len(all), *new(T))
	}
	return all[0]
}

func every[T any](objs []object) []T {
	var out []T
	for _, o := range objs {
		if v, ok := o.obj.(T); ok {
			out = append(out, v)
		}
	}
	return out
}

func kinds(objs []object) []string {
	var k []string
	for _, o := range objs {
		k = append(k, o.meta.Kind)
	}
	sort.Strings(k)
	return k
}

// serveConfig loads the rendered ConfigMap's infscale.yaml through the real
// loader.
func serveConfig(t *testing.T, objs []object) *config.File {
	t.Helper()
	cm := only[*corev1.ConfigMap](t, objs)
	f, err := config.Parse([]byte(cm.Data["infscale.yaml"]), "chart ConfigMap infscale.yaml")
	if err != nil {
		t.Fatalf("rendered config does not load: %v\n%s", err, cm.Data["infscale.yaml"])
	}
	if len(f.Deprecations) > 0 {
		t.Errorf("rendered config uses deprecated keys: %v", config.Errors(f.Deprecations))
	}
	return f
}

// readBase decodes a kustomize manifest of deploy/ strictly into T.
func readBase[T any](t *testing.T, path string) T {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", path))
	if err != nil {
		t.Fatal(err)
	}
	var v T
	if err := yaml.UnmarshalStrict(b, &v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return v
}

// TestDefaults: values.yaml alone renders the Prometheus-mode install of
// deploy/base + deploy/keda: config, Deployment, Service, ServiceMonitor and
// one ScaledObject, no API access.
func TestDefaults(t *testing.T) {
	objs := render(t, "")
	if got, want := kinds(objs), []string{"ConfigMap", "Deployment", "ScaledObject", "Service", "ServiceMonitor"}; !reflect.DeepEqual(got, want) {
		t.Errorf("kinds %v, want %v", got, want)
	}
	f := serveConfig(t, objs)
	if len(f.Targets) != 1 || f.Targets[0].Name != "chat" {
		t.Fatalf("targets %+v, want one named chat", f.Targets)
	}
	d := only[*appsv1.Deployment](t, objs)
	if a := d.Spec.Template.Spec.AutomountServiceAccountToken; a == nil || *a {
		t.Errorf("automountServiceAccountToken %v, want false with no rbac.modes", a)
	}
	if img := d.Spec.Template.Spec.Containers[0].Image; img != "infscale/infscale:latest" {
		t.Errorf("image %q, want infscale/infscale:latest (make image's default)", img)
	}
}

// TestDefaultsMatchKustomize: the chart and deploy/ describe the same install.
// The chart's defaults give deploy/base's pod spec and config and
// deploy/keda's ScaledObject spec; names, namespaces and labels differ only
// by what Helm adds (instance, chart, managed-by).
func TestDefaultsMatchKustomize(t *testing.T) {
	objs := render(t, "")

	base := readBase[appsv1.Deployment](t, "base/deployment.yaml")
	got := only[*appsv1.Deployment](t, objs).Spec.Template.Spec
	want := base.Spec.Template.Spec
	if !reflect.DeepEqual(got.SecurityContext, want.SecurityContext) || !reflect.DeepEqual(got.Volumes, want.Volumes) ||
		!reflect.DeepEqual(got.AutomountServiceAccountToken, want.AutomountServiceAccountToken) {
		t.Errorf("pod spec differs from deploy/base:\nchart %+v\nbase  %+v", got, want)
	}
	gc, wc := got.Containers[0], want.Containers[0]
	gc.Image, wc.Image = "", ""
	gc.ImagePullPolicy = ""
	if !reflect.DeepEqual(gc, wc) {
		t.Errorf("container differs from deploy/base:\nchart %+v\nbase  %+v", gc, wc)
	}

	cm := readBase[corev1.ConfigMap](t, "base/configmap.yaml")
	wantCfg, err := config.Parse([]byte(cm.Data["infscale.yaml"]), "deploy/base/configmap.yaml")
	if err != nil {
		t.Fatal(err)
	}
	gotCfg := serveConfig(t, objs)
	gotCfg.Path = wantCfg.Path // where each was read from
	if !reflect.DeepEqual(gotCfg, wantCfg) {
		t.Errorf("config differs from deploy/base's:\nchart %+v\nbase  %+v", gotCfg, wantCfg)
	}

	so := readBase[kedav1alpha1.ScaledObject](t, "keda/scaledobject.yaml")
	gotSO := only[*kedav1alpha1.ScaledObject](t, objs).Spec
	wantSO := so.Spec
	// The chart names the workload's kind as the HPA's scaleTargetRef does;
	// deploy/keda relies on KEDA's default (apps/v1 Deployment).
	if r := gotSO.ScaleTargetRef; r.APIVersion != "apps/v1" || r.Kind != "Deployment" {
		t.Errorf("scaleTargetRef %+v, want apps/v1 Deployment", r)
	}
	gotSO.ScaleTargetRef = &kedav1alpha1.ScaleTarget{Name: gotSO.ScaleTargetRef.Name}
	if !reflect.DeepEqual(gotSO, wantSO) {
		a, _ := yaml.Marshal(gotSO)
		b, _ := yaml.Marshal(wantSO)
		t.Errorf("ScaledObject spec differs from deploy/keda's:\nchart:\n%s\ndeploy/keda:\n%s", a, b)
	}

	svc := readBase[corev1.Service](t, "base/service.yaml")
	if gs := only[*corev1.Service](t, objs).Spec; !reflect.DeepEqual(gs.Ports, svc.Spec.Ports) || gs.PublishNotReadyAddresses != svc.Spec.PublishNotReadyAddresses {
		t.Errorf("Service spec %+v, want deploy/base's %+v", gs, svc.Spec)
	}
	sm := readBase[monitoringv1.ServiceMonitor](t, "base/servicemonitor.yaml")
	if ge := only[*monitoringv1.ServiceMonitor](t, objs).Spec.Endpoints; !reflect.DeepEqual(ge, sm.Spec.Endpoints) {
		t.Errorf("ServiceMonitor endpoints %+v, want deploy/base's %+v", ge, sm.Spec.Endpoints)
	}
}

// userValues is a user's one file: two targets in two namespaces, one
// scaling to zero, a monitor label, and the given RBAC modes.
func userValues(modes string) string {
	return `
prometheus: {url: http://prom.example:9090, timeout: 5s}
keda: {serverAddress: http://prom.example:9090}
serviceMonitor: {labels: {release: kps}}
rbac: {modes: ` + modes + `}
targets:
- name: chat
  workload: {namespace: llm, apiVersion: apps/v1, kind: Deployment, name: chat}
  scaledObject: {enabled: true}
  config:
    server: vllm
    selector: '{namespace="llm", pod=~"chat-.*"}'
    replicas: 'kube_deployment_spec_replicas{namespace="llm",deployment="chat"}'
    metrics: [{type: queue, target: 24}]
    minReplicaCount: 2
    maxReplicaCount: 12
- name: code
  workload: {namespace: batch, apiVersion: apps/v1, kind: StatefulSet, name: code}
  scaledObject: {enabled: true}
  config:
    server: vllm
    selector: '{namespace="batch", pod=~"code-.*"}'
    replicas: 'kube_statefulset_replicas{namespace="batch",statefulset="code"}'
    metrics: [{type: queue, target: 16}]
    minReplicaCount: 0
    maxReplicaCount: 4
    zero: {cooldownPeriod: 300s, held: 'sum(infscale_activator_held_requests{service="activator-code"})'}
`
}

// TestOneValuesFile: every cluster-specific value comes from the user's file.
func TestOneValuesFile(t *testing.T) {
	objs := render(t, userValues("[]"))
	f := serveConfig(t, objs)
	if f.Prometheus.URL != "http://prom.example:9090" || len(f.Targets) != 2 || f.Targets[1].Name != "code" {
		t.Errorf("config: prometheus %+v, targets %d", f.Prometheus, len(f.Targets))
	}
	if sm := only[*monitoringv1.ServiceMonitor](t, objs); sm.Labels["release"] != "kps" {
		t.Errorf("ServiceMonitor labels %v, want release: kps", sm.Labels)
	}
	sos := every[*kedav1alpha1.ScaledObject](objs)
	if len(sos) != 2 {
		t.Fatalf("%d ScaledObjects, want 2", len(sos))
	}
	// Hand-derived from userValues: name, namespace, kind, min, max, query.
	want := []struct {
		ns, kind, query, activation string
		min, max                    int32
	}{
		{"llm", "Deployment", `max(infscale_desired_replicas{target="chat", namespace="infscale", service="infscale"})`, "", 2, 12},
		{"batch", "StatefulSet", `max(infscale_desired_replicas{target="code", namespace="infscale", service="infscale"})`, "0", 0, 4},
	}
	for i, so := range sos {
		w := want[i]
		tr := so.Spec.Triggers[0]
		if so.Namespace != w.ns || so.Spec.ScaleTargetRef.Kind != w.kind || *so.Spec.MinReplicaCount != w.min ||
			*so.Spec.MaxReplicaCount != w.max || tr.Metadata["query"] != w.query || tr.Metadata["activationThreshold"] != w.activation ||
			tr.Metadata["serverAddress"] != "http://prom.example:9090" || tr.MetricType != "AverageValue" || tr.Metadata["ignoreNullValues"] != "false" {
			t.Errorf("ScaledObject %d: %s/%s %+v min %d max %d trigger %+v, want %+v", i, so.Namespace, so.Name,
				so.Spec.ScaleTargetRef, *so.Spec.MinReplicaCount, *so.Spec.MaxReplicaCount, tr, w)
		}
	}
}

// rule is one RBAC rule in a comparable form.
type rule struct{ ns, group, resource, verbs string }

func rules(objs []object) []rule {
	var out []rule
	for _, r := range every[*rbacv1.Role](objs) {
		for _, p := range r.Rules {
			for _, g := range p.APIGroups {
				for _, res := range p.Resources {
					out = append(out, rule{r.Namespace, g, res, strings.Join(p.Verbs, ",")})
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return fmt.Sprint(out[i]) < fmt.Sprint(out[j]) })
	return out
}

// TestRBACModes: each mode grants exactly what pkg/kube calls for it
// (scale get/update, HPAs list/watch for the refusal; pods list/watch
// where serve scrapes a workload's pods, patch there for deletion cost),
// in the workload namespaces (the Lease in the release's), bound to the
// chart's ServiceAccount; no mode renders no account and no token.
//
// Pods only in embedded mode, in the namespace of a target that scrapes
// its pods (scrape: {port}): in Prometheus mode serve reads no pod (scrape:
// and pod_deletion_cost are refused there), yet every mode granted list and
// watch on pods (every pod spec of the namespace, env included) and
// deletion-cost patch on them.
func TestRBACModes(t *testing.T) {
	readOnly := func(ns, scale string, scaleVerbs, podVerbs string) []rule {
		rs := []rule{{ns, "apps", scale, scaleVerbs}}
		if podVerbs != "" {
			rs = append(rs, rule{ns, "", "pods", podVerbs})
		}
		return rs
	}
	// embedded: userValues without Prometheus, chat (llm) scraping its
	// pods, code (batch) read from a URL list.
	embedded := func(modes string) string {
		v := strings.Replace(userValues(modes), "prometheus: {url: http://prom.example:9090, timeout: 5s}", "prometheus: {url: null}", 1)
		v = strings.Replace(v, "    replicas: 'kube_deployment_spec_replicas{namespace=\"llm\",deployment=\"chat\"}'\n", "    scrape: {port: 8000}\n", 1)
		return strings.Replace(v, "    replicas: 'kube_statefulset_replicas{namespace=\"batch\",statefulset=\"code\"}'\n", "    scrape: ['http://code-0.code.batch:8000/metrics']\n", 1)
	}
	refuse := func(ns string) []rule {
		return []rule{{ns, "autoscaling", "horizontalpodautoscalers", "list,watch"}}
	}
	// get and update by name (TestRBACResourceNames), create by none.
	lease := []rule{{"infscale", "coordination.k8s.io", "leases", "create"}, {"infscale", "coordination.k8s.io", "leases", "get,update"}}
	cat := func(rs ...[]rule) []rule {
		var out []rule
		for _, r := range rs {
			out = append(out, r...)
		}
		sort.Slice(out, func(i, j int) bool { return fmt.Sprint(out[i]) < fmt.Sprint(out[j]) })
		return out
	}
	cases := []struct {
		modes string
		mode  func(string) string
		want  []rule
	}{
		{"[]", userValues, nil},
		{"[read-only]", userValues, cat(readOnly("batch", "statefulsets/scale", "get", ""), readOnly("llm", "deployments/scale", "get", ""))},
		{"[apply]", userValues, cat(readOnly("batch", "statefulsets/scale", "get,update", ""), readOnly("llm", "deployments/scale", "get,update", ""), refuse("batch"), refuse("llm"))},
		{"[deletion-cost]", userValues, cat(readOnly("batch", "statefulsets/scale", "get", ""), readOnly("llm", "deployments/scale", "get", ""))},
		{"[apply, deletion-cost, leases]", userValues, cat(readOnly("batch", "statefulsets/scale", "get,update", ""), readOnly("llm", "deployments/scale", "get,update", ""), refuse("batch"), refuse("llm"), lease)},
		{"[read-only]", embedded, cat(readOnly("batch", "statefulsets/scale", "get", ""), readOnly("llm", "deployments/scale", "get", "list,watch"))},
		{"[deletion-cost]", embedded, cat(readOnly("batch", "statefulsets/scale", "get", ""), readOnly("llm", "deployments/scale", "get", "list,watch,patch"))},
		{"[apply, deletion-cost, leases]", embedded, cat(readOnly("batch", "statefulsets/scale", "get,update", ""), readOnly("llm", "deployments/scale", "get,update", "list,watch,patch"), refuse("batch"), refuse("llm"), lease)},
	}
	for _, c := range cases {
		name := c.modes
		if c.mode != nil && c.want != nil && strings.Contains(c.mode(c.modes), "url: null") {
			name += " embedded"
		}
		t.Run(name, func(t *testing.T) {
			objs := render(t, c.mode(c.modes))
			if got := rules(objs); !reflect.DeepEqual(got, c.want) {
				t.Errorf("rules:\n got %v\nwant %v", got, c.want)
			}
			spec := only[*appsv1.Deployment](t, objs).Spec.Template.Spec
			sas := every[*corev1.ServiceAccount](objs)
			if c.want == nil {
				if len(sas) != 0 || spec.ServiceAccountName != "" || *spec.AutomountServiceAccountToken {
					t.Errorf("no modes: %d ServiceAccounts, serviceAccountName %q, automount %v; want none", len(sas), spec.ServiceAccountName, *spec.AutomountServiceAccountToken)
				}
				return
			}
			// leases: serve elects one writer, its identity the pod's name.
			args := strings.Join(spec.Containers[0].Args, " ")
			elects := strings.Contains(args, "--leader-elect ") || strings.HasSuffix(args, "--leader-elect")
			if want := strings.Contains(c.modes, "leases"); elects != want ||
				(want && (!strings.Contains(args, "--leader-elect-resource-name=infscale") || !strings.Contains(args, "--leader-elect-resource-namespace=infscale") ||
					len(spec.Containers[0].Env) != 1 || spec.Containers[0].Env[0].Name != "POD_NAME" || spec.Containers[0].Env[0].ValueFrom.FieldRef.FieldPath != "metadata.name")) {
				t.Errorf("modes %s: args %q env %+v; want leader election exactly with leases (Lease infscale/infscale, POD_NAME from metadata.name)", c.modes, args, spec.Containers[0].Env)
			}
			if len(sas) != 1 || spec.ServiceAccountName != sas[0].Name || !*spec.AutomountServiceAccountToken {
				t.Errorf("%d ServiceAccounts, pod serviceAccountName %q automount %v", len(sas), spec.ServiceAccountName, *spec.AutomountServiceAccountToken)
			}
			for _, rb := range every[*rbacv1.RoleBinding](objs) {
				if len(rb.Subjects) != 1 || rb.Subjects[0].Name != sas[0].Name || rb.Subjects[0].Namespace != "infscale" || rb.RoleRef.Kind != "Role" {
					t.Errorf("RoleBinding %s/%s: %+v -> %+v", rb.Namespace, rb.Name, rb.Subjects, rb.RoleRef)
				}
			}
		})
	}
}

// TestKubeConfig: with API access the rendered config names each
// target's workload (namespace, scaleTargetRef) and drops its replicas
// query (the scale subresource replaces it); apply: true reaches the
// config of an applying target whose ScaledObject is off. pkg/config loads
// the result.
func TestKubeConfig(t *testing.T) {
	values := strings.Replace(userValues("[apply]"), "kind: StatefulSet, name: code}\n  scaledObject: {enabled: true}",
		"kind: StatefulSet, name: code}\n  apply: true\n  scaledObject: {enabled: false}", 1)
	objs := render(t, values)
	f := serveConfig(t, objs)
	chat, code := f.Targets[0], f.Targets[1]
	if r := chat.ScaleTargetRef; r == nil || r.APIVersion != "apps/v1" || r.Kind != "Deployment" || r.Name != "chat" || chat.Namespace != "llm" || chat.Replicas != "" || chat.Apply {
		t.Errorf("chat: ref %+v namespace %q replicas %q apply %v; want apps/v1 Deployment chat in llm, no replicas query, no apply", r, chat.Namespace, chat.Replicas, chat.Apply)
	}
	if r := code.ScaleTargetRef; r == nil || r.Kind != "StatefulSet" || code.Namespace != "batch" || !code.Apply {
		t.Errorf("code: ref %+v namespace %q apply %v; want StatefulSet code in batch, applying", r, code.Namespace, code.Apply)
	}
	if n := len(every[*kedav1alpha1.ScaledObject](objs)); n != 1 {
		t.Errorf("%d ScaledObjects, want chat's alone", n)
	}
	// Without API access the config is the user's, replicas query included.
	if f := serveConfig(t, render(t, userValues("[]"))); f.Targets[0].ScaleTargetRef != nil || f.Targets[0].Replicas == "" {
		t.Errorf("no modes: ref %+v replicas %q; want none and the query", f.Targets[0].ScaleTargetRef, f.Targets[0].Replicas)
	}
	// A workload whose plural is not <kind>s names its resource.
	objs = render(t, strings.Replace(userValues("[read-only]"), "kind: StatefulSet, name: code}", "kind: StatefulSet, name: code, resource: statefulsets}", 1))
	found := false
	for _, r := range rules(objs) {
		found = found || (r.ns == "batch" && r.resource == "statefulsets/scale")
	}
	if !found {
		t.Errorf("rules %v: no statefulsets/scale in batch", rules(objs))
	}
}

// TestBadValues: a wrong value fails the render with a message naming it.
func TestBadValues(t *testing.T) {
	for _, c := range []struct{ values, want string }{
		{`rbac: {modes: [write]}`, `rbac.modes: "write" is not a mode`},
		{"replicas: 2\nrbac: {modes: [apply]}", "several replicas would all write; add leases"},
		{"targets:\n- {name: chat, apply: true, workload: {namespace: llm, apiVersion: apps/v1, kind: Deployment, name: chat}, scaledObject: {enabled: false}, config: {server: vllm, maxReplicaCount: 4}}", "targets[chat].apply: needs rbac.modes to include apply"},
		{"rbac: {modes: [apply]}\ntargets:\n- {name: chat, apply: true, workload: {namespace: llm, apiVersion: apps/v1, kind: Deployment, name: chat}, scaledObject: {enabled: true}, config: {server: vllm, maxReplicaCount: 4}}", "targets[chat].apply: its ScaledObject's HPA would be a second writer"},
		{"targets:\n- {name: chat, workload: {namespace: llm, apiVersion: apps/v1, kind: Deployment, name: chat}, scaledObject: {enabled: true}, config: {server: vllm, minReplicaCount: 1}}", "targets[chat].config.maxReplicaCount is required"},
		// serve's own key for it, config.apply (docs/config.md), is checked as
		// apply is: it rendered a ScaledObject beside it and no update rights.
		{"targets:\n- {name: chat, workload: {namespace: llm, name: chat}, scaledObject: {enabled: false}, config: {apply: true, server: vllm, maxReplicaCount: 4}}", "targets[chat].config.apply: needs rbac.modes to include apply"},
		{"rbac: {modes: [read-only]}\ntargets:\n- {name: chat, workload: {namespace: llm, name: chat}, config: {apply: true, server: vllm, maxReplicaCount: 4}}", "targets[chat].config.apply: needs rbac.modes to include apply"},
		{"rbac: {modes: [apply]}\ntargets:\n- {name: chat, workload: {namespace: llm, name: chat}, config: {apply: true, server: vllm, maxReplicaCount: 4}}", "targets[chat].config.apply: its ScaledObject's HPA would be a second writer"},
		// A scaleTargetRef in serve's config is read from the API: with no
		// rbac.modes the pod has no token, and serve exited 2 at every start.
		{"targets:\n- {name: chat, workload: {namespace: llm, name: chat}, config: {namespace: llm, scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat}, server: vllm, maxReplicaCount: 4}}", "targets[chat].config.scaleTargetRef: serve reads the workload from the Kubernetes API, but rbac.modes is empty"},
		{strings.Replace(pairValues("", "[]"), "      decode:\n", "      decode:\n        scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat-decode}\n", 1), "targets[chat].config.roles.decode.scaleTargetRef: serve reads the workload from the Kubernetes API, but rbac.modes is empty"},
		// The chart writes the target's name into its config: another name
		// there was dropped without a word.
		{"targets:\n- {name: chat, workload: {namespace: llm, name: chat}, config: {name: other, server: vllm, maxReplicaCount: 4}}", `targets[chat].config.name: "other", but the target's name is "chat"`},
		// pod_deletion_cost patches pods: without the deletion-cost mode every
		// scale-down's patch was forbidden at run time.
		{"prometheus: {url: null}\nrbac: {modes: [apply]}\ntargets:\n- {name: chat, apply: true, workload: {namespace: llm, name: chat}, scaledObject: {enabled: false}, config: {pod_deletion_cost: true, scrape: {port: 8000}, metrics: [{type: queue, target: 24}], maxReplicaCount: 4}}", "targets[chat].config.pod_deletion_cost: needs rbac.modes to include deletion-cost"},
		// KEDA refuses a ScaledObject whose minReplicaCount is above its max (and serve the config): refused at render.
		{"targets:\n- {name: chat, workload: {namespace: llm, name: chat}, config: {server: vllm, minReplicaCount: 5, maxReplicaCount: 4}}", "targets[chat].config.minReplicaCount: 5 is above its maxReplicaCount 4"},
	} {
		_, err := tryRender(c.values)
		if err == nil || !bytes.Contains([]byte(err.Error()), []byte(c.want)) {
			t.Errorf("values %q: error %v, want one containing %q", c.values, err, c.want)
		}
	}
}

// TestKubeEmbedded: the chart's embedded mode with pod discovery, no
// Prometheus and no KEDA: prometheus.url removed (null), the target's
// scrape: {port}, apply: true, rbac.modes [apply].
func TestKubeEmbedded(t *testing.T) {
	objs := render(t, `
prometheus: {url: null}
rbac: {modes: [apply]}
targets:
- name: chat
  workload: {namespace: llm, apiVersion: apps/v1, kind: Deployment, name: chat}
  apply: true
  scaledObject: {enabled: false}
  config:
    scrape: {port: 8000}
    metrics: [{type: queue, target: 24}]
    maxReplicaCount: 8
`)
	f := serveConfig(t, objs)
	tg := f.Targets[0]
	if !f.Prometheus.Embedded() || tg.Scrape.Pods == nil || tg.Scrape.Pods.Port.IntValue() != 8000 || !tg.Apply || tg.ScaleTargetRef == nil || tg.Namespace != "llm" {
		t.Errorf("config: embedded %v, scrape %+v, apply %v, ref %+v, namespace %q", f.Prometheus.Embedded(), tg.Scrape, tg.Apply, tg.ScaleTargetRef, tg.Namespace)
	}
	if n := len(every[*kedav1alpha1.ScaledObject](objs)); n != 0 {
		t.Errorf("%d ScaledObjects, want none", n)
	}
}

// TestOldConfigNames: a values file of the previous release (interval,
// config.min and config.max) still renders: the ScaledObject's range from
// min and max, and serve's config with the old keys as given, which the
// loader reads with a deprecation each (serve logs them).
func TestOldConfigNames(t *testing.T) {
	objs := render(t, "interval: 30s\ntargets:\n- {name: chat, workload: {namespace: llm, apiVersion: apps/v1, kind: Deployment, name: chat}, scaledObject: {enabled: true}, config: {server: vllm, selector: '{app=\"chat\"}', metrics: [{type: queue, target: 24}], min: 2, max: 5}}\n")
	so := only[*kedav1alpha1.ScaledObject](t, objs)
	if *so.Spec.MinReplicaCount != 2 || *so.Spec.MaxReplicaCount != 5 {
		t.Errorf("ScaledObject range %d..%d, want 2..5", *so.Spec.MinReplicaCount, *so.Spec.MaxReplicaCount)
	}
	cm := only[*corev1.ConfigMap](t, objs)
	f, err := config.Parse([]byte(cm.Data["infscale.yaml"]), "cm")
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, d := range f.Deprecations {
		keys = append(keys, d.Key)
	}
	if strings.Join(keys, " ") != "interval targets[0].max targets[0].min" && strings.Join(keys, " ") != "interval targets[0].min targets[0].max" {
		t.Errorf("deprecations %v, want interval, targets[0].min and targets[0].max", f.Deprecations)
	}
	if f.IntervalDuration().Seconds() != 30 || *f.Targets[0].Min != 2 || *f.Targets[0].Max != 5 {
		t.Errorf("loaded interval %v, min %d, max %d; want 30s, 2, 5", f.IntervalDuration(), *f.Targets[0].Min, *f.Targets[0].Max)
	}
}

// TestInferencePool: a target whose config names an inferencePoolRef
// (embedded mode) gets get on InferencePools in its workload namespace,
// and with server: epp get on Services (its Endpoint Picker's, whose pods
// come from the pod informer the read-only mode already grants); the
// rendered config loads with the pool. Without API access, or beside
// prometheus.url, the render fails naming the value.
func TestInferencePool(t *testing.T) {
	values := `
prometheus: {url: null}
rbac: {modes: [read-only]}
targets:
- name: chat
  workload: {namespace: llm, apiVersion: apps/v1, kind: Deployment, name: chat}
  scaledObject: {enabled: false}
  config:
    server: epp
    inferencePoolRef: {name: chat}
    metrics: [{type: queue, target: 24}]
    maxReplicaCount: 8
- name: code
  workload: {namespace: batch, apiVersion: apps/v1, kind: Deployment, name: code}
  scaledObject: {enabled: false}
  config:
    inferencePoolRef: {name: code}
    metrics: [{type: queue, target: 16}]
    maxReplicaCount: 4
`
	objs := render(t, values)
	want := []rule{
		{"batch", "", "pods", "list,watch"},
		{"batch", "apps", "deployments/scale", "get"},
		{"batch", "inference.networking.k8s.io", "inferencepools", "get"},
		{"llm", "", "pods", "list,watch"},
		{"llm", "", "services", "get"},
		{"llm", "apps", "deployments/scale", "get"},
		{"llm", "inference.networking.k8s.io", "inferencepools", "get"},
	}
	sort.Slice(want, func(i, j int) bool { return fmt.Sprint(want[i]) < fmt.Sprint(want[j]) })
	if got := rules(objs); !reflect.DeepEqual(got, want) {
		t.Errorf("rules:\n got %v\nwant %v", got, want)
	}
	f := serveConfig(t, objs)
	chat, code := f.Targets[0], f.Targets[1]
	if chat.InferencePoolRef == nil || chat.InferencePoolRef.Name != "chat" || chat.Namespace != "llm" || chat.ScaleTargetRef == nil ||
		code.InferencePoolRef == nil || code.InferencePoolRef.Name != "code" || code.Scrape.Pods == nil || code.Scrape.Pods.Path != "/metrics" {
		t.Errorf("config: chat pool %+v ns %q ref %+v; code pool %+v scrape %+v", chat.InferencePoolRef, chat.Namespace, chat.ScaleTargetRef, code.InferencePoolRef, code.Scrape.Pods)
	}
	// docs/chart.md's example: apply, scale from zero on the EPP's queue.
	objs = render(t, `
prometheus: {url: null}
rbac: {modes: [apply]}
targets:
- name: chat
  workload: {namespace: llm, apiVersion: apps/v1, kind: Deployment, name: chat}
  apply: true
  scaledObject: {enabled: false}
  config:
    server: epp
    inferencePoolRef: {name: chat}
    metrics: [{type: queue, target: 24}]
    minReplicaCount: 0
    maxReplicaCount: 8
    zero: {flow_control: true}
`)
	if tg := serveConfig(t, objs).Targets[0]; !tg.Apply || tg.InferencePoolRef == nil || tg.Zero == nil || !tg.Zero.FlowControl {
		t.Errorf("docs/chart.md's example: apply %v pool %+v zero %+v", tg.Apply, tg.InferencePoolRef, tg.Zero)
	}
	if got := rules(objs); len(got) != 5 {
		t.Errorf("docs/chart.md's example: rules %v, want apply's three and the pool's two", got)
	}
	for _, c := range []struct{ values, want string }{
		{strings.Replace(values, "rbac: {modes: [read-only]}", "rbac: {modes: []}", 1), "targets[chat].config.inferencePoolRef: needs rbac.modes"},
		{strings.Replace(values, "prometheus: {url: null}", "prometheus: {url: http://prom:9090}", 1), "targets[chat].config.inferencePoolRef: is embedded mode's"},
	} {
		if _, err := tryRender(c.values); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one containing %q", err, c.want)
		}
	}
}

// TestTargetWithoutScaledObject: a values file's targets list replaces the
// default list whole, so a target written without scaledObject must still
// get the documented default (docs/chart.md: enabled, pollingInterval 15,
// fallback failureThreshold 3); the chart rendered no ScaledObject at all
// (KEDA never scaled the workload) and, with apply: true, failed with
// "nil pointer evaluating interface {}.enabled".
func TestTargetWithoutScaledObject(t *testing.T) {
	const target = "- {name: chat, workload: {namespace: llm, apiVersion: apps/v1, kind: Deployment, name: chat}, config: {server: vllm, metrics: [{type: queue, target: 24}], maxReplicaCount: 4}}"
	objs := render(t, "targets:\n"+target)
	so := only[*kedav1alpha1.ScaledObject](t, objs)
	if so.Namespace != "llm" || so.Spec.ScaleTargetRef.Name != "chat" {
		t.Errorf("ScaledObject %s/%s on %q, want llm/chat on chat", so.Namespace, so.Name, so.Spec.ScaleTargetRef.Name)
	}
	// minReplicaCount left out: 1 (serve's default); maxReplicaCount 4 as given.
	if so.Spec.MinReplicaCount == nil || *so.Spec.MinReplicaCount != 1 || so.Spec.MaxReplicaCount == nil || *so.Spec.MaxReplicaCount != 4 {
		t.Errorf("min %v max %v, want 1 and 4", so.Spec.MinReplicaCount, so.Spec.MaxReplicaCount)
	}
	if p := so.Spec.PollingInterval; p == nil || *p != 15 {
		t.Errorf("pollingInterval %v, want 15", p)
	}
	if f := so.Spec.Fallback; f == nil || f.FailureThreshold != 3 {
		t.Errorf("fallback %+v, want failureThreshold 3", f)
	}
	if len(so.Spec.Triggers) != 1 || so.Spec.Triggers[0].Metadata["query"] != `max(infscale_desired_replicas{target="chat", namespace="infscale", service="infscale"})` {
		t.Errorf("triggers %+v, want the one query max(infscale_desired_replicas{target=\"chat\", namespace=\"infscale\", service=\"infscale\"})", so.Spec.Triggers)
	}
	// enabled: false still turns it off.
	off := strings.Replace(target, "config:", "scaledObject: {enabled: false}, config:", 1)
	if got := kinds(render(t, "targets:\n"+off)); slices.Contains(got, "ScaledObject") {
		t.Errorf("scaledObject.enabled false: kinds %v, want no ScaledObject", got)
	}
	// apply: true without scaledObject is the default ScaledObject beside
	// serve's writes: refused by name, as with enabled: true.
	apply := strings.Replace(target, "config:", "apply: true, config:", 1)
	_, err := tryRender("rbac: {modes: [apply]}\ntargets:\n" + apply)
	if err == nil || !strings.Contains(err.Error(), "targets[chat].apply: its ScaledObject's HPA would be a second writer") {
		t.Errorf("apply without scaledObject: %v, want the second-writer refusal", err)
	}
}

// TestValuesTypos: values.schema.json, which Helm checks before it renders
// (helm install, helm template, and ToRenderValues here), refuses a
// misspelt key by its path; Helm ignored it and rendered without it (a
// ServiceMonitor without the release label Prometheus selects on, one
// replica instead of two, a ScaledObject the user meant to turn off).
func TestValuesTypos(t *testing.T) {
	for _, c := range []struct{ values, want string }{
		{"serviceMonitor: {lables: {release: prom}}", "at '/serviceMonitor': additional properties 'lables' not allowed"},
		{"replica: 2", "at '': additional properties 'replica' not allowed"},
		{"targets:\n- {name: chat, scaledobject: {enabled: false}, config: {maxReplicaCount: 4}}", "at '/targets/0': additional properties 'scaledobject' not allowed"},
		{"targets:\n- {name: chat, scaledObject: {enable: false}, config: {maxReplicaCount: 4}}", "at '/targets/0/scaledObject': additional properties 'enable' not allowed"},
		{"rbac: {mode: [apply]}", "at '/rbac': additional properties 'mode' not allowed"},
		{"replicas: \"2\"", "at '/replicas': got string, want integer"},
		// YAML reads an unquoted 1.10 as the number 1.1: the image would be :1.1.
		{"image: {tag: 1.10}", "at '/image/tag': got number, want string"},
		{"targets:\n- {config: {maxReplicaCount: 4}}", "at '/targets/0': missing property 'name'"},
		// prometheus-operator's Duration (the CRD's pattern): the API
		// server refused them at install, after the config check had run.
		{"serviceMonitor: {interval: 15 s}", "at '/serviceMonitor/interval'"},
		{"podMonitor: {interval: 1.5m}", "at '/podMonitor/interval'"},
	} {
		_, err := tryRender(c.values)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("values %q: error %v, want one containing %q", c.values, err, c.want)
		}
	}
	// The documented values (docs/chart.md's examples) still pass: the
	// serve config and the prometheus block are serve's to check.
	for _, v := range []string{
		"prometheus: {url: null}\nrbac: {modes: [apply]}\ntargets:\n- {name: chat, workload: {namespace: llm, apiVersion: apps/v1, kind: Deployment, name: chat}, apply: true, scaledObject: {enabled: false}, config: {scrape: {port: 8000}, metrics: [{type: queue, target: 24}], maxReplicaCount: 8}}",
		"prometheus: {url: 'https://prometheus.example:9090', basic_auth: {username: infscale, password_file: /etc/infscale-auth/password}}\nkeda: {serverAddress: 'http://prometheus-operated.monitoring.svc:9090'}\nextraVolumes: [{name: prometheus-auth, secret: {secretName: prometheus-auth}}]\nextraVolumeMounts: [{name: prometheus-auth, mountPath: /etc/infscale-auth, readOnly: true}]",
		"replicas: 2\nrbac: {modes: [apply, leases]}\npodDisruptionBudget: {minAvailable: 1}",
		"serviceMonitor: {interval: 1m30s}\npodMonitor: {interval: 500ms}",
	} {
		if _, err := tryRender(v); err != nil {
			t.Errorf("values %q: %v", v, err)
		}
	}
}

// TestScaledObjectWorkload: a target's ScaledObject needs its workload's
// name and namespace (KEDA scales a workload of the ScaledObject's own
// namespace): without workload the render failed with "nil pointer
// evaluating interface {}.name", and without workload.namespace the
// ScaledObject was rendered with no namespace, landing in the release's
// (infscale), where no workload chat runs. apiVersion and kind left out
// are KEDA's defaults, apps/v1 Deployment.
func TestScaledObjectWorkload(t *testing.T) {
	const cfg = "config: {metrics: [{type: queue, target: 24}], selector: '{pod=\"x\"}', maxReplicaCount: 4}}"
	for _, c := range []struct{ values, want string }{
		{"targets:\n- {name: chat, " + cfg, "targets[chat].workload.name is required for its ScaledObject"},
		{"targets:\n- {name: chat, workload: {name: chat}, " + cfg, "targets[chat].workload.namespace is required for its ScaledObject"},
	} {
		_, err := tryRender(c.values)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("values %q: error %v, want one containing %q", c.values, err, c.want)
		}
	}
	so := only[*kedav1alpha1.ScaledObject](t, render(t, "targets:\n- {name: chat, workload: {name: chat, namespace: llm}, "+cfg))
	if r := so.Spec.ScaleTargetRef; so.Namespace != "llm" || r.APIVersion != "apps/v1" || r.Kind != "Deployment" || r.Name != "chat" {
		t.Errorf("ScaledObject in %q on %+v, want llm on apps/v1 Deployment chat", so.Namespace, r)
	}
	// Without a ScaledObject the workload is not needed.
	render(t, "targets:\n- {name: chat, scaledObject: {enabled: false}, "+cfg)
}

// TestKubeWorkloadDefaults: with rbac.modes a workload that leaves
// apiVersion and kind out is KEDA's apps/v1 Deployment (docs/chart.md) in
// the Role and in serve's scaleTargetRef too, as it is in the ScaledObject:
// the render failed with "wrong type for value; expected string; got
// interface {}" in rbac.yaml. A target with no workload at all fails naming
// workload.name (was "nil pointer evaluating interface {}.apiVersion").
func TestKubeWorkloadDefaults(t *testing.T) {
	const cfg = "config: {metrics: [{type: queue, target: 24}], selector: '{pod=\"x\"}', maxReplicaCount: 4}}"
	objs := render(t, "rbac: {modes: [read-only]}\ntargets:\n- {name: chat, workload: {namespace: llm, name: chat}, "+cfg)
	want := []rule{{"llm", "apps", "deployments/scale", "get"}} // Prometheus mode: no pods
	if got := rules(objs); !reflect.DeepEqual(got, want) {
		t.Errorf("rules %v, want %v", got, want)
	}
	chat := serveConfig(t, objs).Targets[0]
	if r := chat.ScaleTargetRef; r == nil || r.APIVersion != "apps/v1" || r.Kind != "Deployment" || r.Name != "chat" || chat.Namespace != "llm" {
		t.Errorf("ref %+v in %q, want apps/v1 Deployment chat in llm", r, chat.Namespace)
	}
	so := only[*kedav1alpha1.ScaledObject](t, objs)
	if r := so.Spec.ScaleTargetRef; r.APIVersion != "apps/v1" || r.Kind != "Deployment" || r.Name != "chat" {
		t.Errorf("ScaledObject on %+v, want apps/v1 Deployment chat", r)
	}
	_, err := tryRender("rbac: {modes: [read-only]}\ntargets:\n- {name: chat, scaledObject: {enabled: false}, " + cfg)
	if want := "targets[chat].workload.name is required: the workload's name (e.g. {namespace: llm, apiVersion: apps/v1, kind: Deployment, name: chat}); with rbac.modes serve reads it as the target's scaleTargetRef"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("no workload: error %v, want one containing %q", err, want)
	}
}

// TestNoTargetsRefused: `targets: []` rendered a serve config with an
// empty targets list, which serve refuses at start ("targets: at least one
// target is required"): the install succeeded and the pod crash-looped.
// The schema refuses it at render, naming /targets.
func TestNoTargetsRefused(t *testing.T) {
	_, err := tryRender("targets: []\n")
	if err == nil || !strings.Contains(err.Error(), "at '/targets'") {
		t.Errorf("targets: []: error %v, want one naming /targets", err)
	}
	// What serve would have said in the pod's log.
	if _, err := config.Parse([]byte("prometheus: {url: 'http://p:9090'}\ntargets: []\n"), "x"); err == nil || !strings.Contains(err.Error(), "at least one target is required") {
		t.Errorf("serve on an empty targets list: %v, want \"at least one target is required\"", err)
	}
}

// TestTargetNameAsServe: a target's name is the target label of every
// infscale_* series, and serve refuses one outside letters, digits, '_',
// '.', '-' or longer than 128 at start: the install succeeded and the pod
// crash-looped. The schema refuses the same names at render, naming
// /targets/0/name, and takes the rest.
func TestTargetNameAsServe(t *testing.T) {
	long := strings.Repeat("a", 128)
	for _, c := range []struct {
		name string
		ok   bool
	}{
		{"chat", true},
		{"Chat.v1_a-b", true},
		{long, true},
		{long + "a", false}, // 129
		{"chat bot", false},
		{`chat"x`, false},
		{"chat/a", false},
		{"", false},
	} {
		q := strconv.Quote(c.name)
		_, err := tryRender("targets:\n- {name: " + q + ", workload: {namespace: llm, name: chat}, config: {server: vllm, selector: '{pod=\"x\"}', metrics: [{type: queue, target: 24}], maxReplicaCount: 8}}\n")
		if c.ok && err != nil {
			t.Errorf("name %s: %v, want it rendered", q, err)
		}
		if !c.ok && (err == nil || !strings.Contains(err.Error(), "at '/targets/0/name'")) {
			t.Errorf("name %s: error %v, want one naming /targets/0/name", q, err)
		}
		// serve agrees (an empty name is "required" there).
		_, serr := config.Parse([]byte("prometheus: {url: 'http://p:9090'}\ntargets:\n- {name: "+q+", selector: '{pod=\"x\"}', metrics: [{type: queue, target: 24}], maxReplicaCount: 8}\n"), "x")
		if (serr == nil) != c.ok {
			t.Errorf("name %s: serve's config says %v, the chart's schema ok=%v", q, serr, c.ok)
		}
	}
}

// TestDuplicateTargetNames: two targets of one name (on two workloads, so
// no ScaledObject collides) rendered, and serve refused the config at
// start ("duplicate target name"): the pod crash-looped. Refused at render,
// naming the target; two names render.
func TestDuplicateTargetNames(t *testing.T) {
	two := func(a, b string) string {
		tg := func(name, workload string) string {
			return "- {name: " + name + ", workload: {namespace: llm, name: " + workload + "}, config: {server: vllm, selector: '{pod=\"x\"}', metrics: [{type: queue, target: 24}], maxReplicaCount: 8}}\n"
		}
		return "targets:\n" + tg(a, "chat") + tg(b, "chat2")
	}
	if _, err := tryRender(two("chat", "chat")); err == nil || !strings.Contains(err.Error(), "targets[chat]: two targets of one name") {
		t.Errorf("two targets named chat: %v, want targets[chat]: two targets of one name", err)
	}
	objs := render(t, two("chat", "code"))
	if f := serveConfig(t, objs); len(f.Targets) != 2 || f.Targets[0].Name != "chat" || f.Targets[1].Name != "code" {
		t.Errorf("chat and code: targets %+v", f.Targets)
	}
}

// TestRBACResourceNames: serve gets and updates the scale subresource of
// the workloads it names, and its own Lease, by name only, so the Roles
// name them: before, apply's `update` on deployments/scale let serve's
// account rescale every Deployment of a workload namespace, and leases'
// `get, update` take over any other component's leader election Lease in
// the release namespace. create keeps no name (RBAC cannot limit it: the
// object does not exist yet); list/watch and patch on pods, and the HPAs,
// are read through namespace informers and cannot be by name either.
func TestRBACResourceNames(t *testing.T) {
	values := userValues("[apply, leases]") + `- name: chat2
  workload: {namespace: llm, apiVersion: apps/v1, kind: Deployment, name: chat-b}
  scaledObject: {enabled: true}
  config:
    server: vllm
    selector: '{namespace="llm", pod=~"chat-b-.*"}'
    metrics: [{type: queue, target: 24}]
    maxReplicaCount: 4
`
	var got []string
	for _, r := range every[*rbacv1.Role](render(t, values)) {
		for _, p := range r.Rules {
			got = append(got, fmt.Sprintf("%s/%s %v %v %v", r.Namespace, r.Name, p.Resources, p.Verbs, p.ResourceNames))
		}
	}
	sort.Strings(got)
	want := []string{
		"batch/infscale [horizontalpodautoscalers] [list watch] []",
		"batch/infscale [statefulsets/scale] [get update] [code]",
		"infscale/infscale-leases [leases] [create] []",
		"infscale/infscale-leases [leases] [get update] [infscale]",
		"llm/infscale [deployments/scale] [get update] [chat chat-b]",
		"llm/infscale [horizontalpodautoscalers] [list watch] []",
	}
	if !slices.Equal(got, want) {
		t.Errorf("rules:\n got %q\nwant %q", got, want)
	}

	// An InferencePool is got by its inferencePoolRef's name: two pools in
	// one namespace, both named; the EPP's Service is not known at render.
	pools := `prometheus: {url: null}
rbac: {modes: [read-only]}
targets:
- {name: chat, workload: {namespace: llm, name: chat}, scaledObject: {enabled: false}, config: {server: epp, inferencePoolRef: {name: chat-pool}, metrics: [{type: queue, target: 24}], maxReplicaCount: 8}}
- {name: code, workload: {namespace: llm, name: code}, scaledObject: {enabled: false}, config: {inferencePoolRef: {name: code-pool}, metrics: [{type: queue, target: 24}], maxReplicaCount: 8}}
`
	got = nil
	for _, r := range every[*rbacv1.Role](render(t, pools)) {
		for _, p := range r.Rules {
			got = append(got, fmt.Sprintf("%s/%s %v %v %v", r.Namespace, r.Name, p.Resources, p.Verbs, p.ResourceNames))
		}
	}
	sort.Strings(got)
	want = []string{
		"llm/infscale [deployments/scale] [get] [chat code]",
		"llm/infscale [inferencepools] [get] [chat-pool code-pool]",
		"llm/infscale [pods] [list watch] []",
		"llm/infscale [services] [get] []",
	}
	if !slices.Equal(got, want) {
		t.Errorf("pool rules:\n got %q\nwant %q", got, want)
	}
}

// TestConfigApply: serve's own apply: key in a target's config renders as
// targets[].apply does (apply: true in serve's config, update on the scale
// subresource), and pod_deletion_cost with the deletion-cost mode renders.
func TestConfigApply(t *testing.T) {
	objs := render(t, `prometheus: {url: null}
rbac: {modes: [apply, deletion-cost]}
targets:
- name: chat
  workload: {namespace: llm, name: chat}
  scaledObject: {enabled: false}
  config: {apply: true, pod_deletion_cost: true, scrape: {port: 8000}, metrics: [{type: queue, target: 24}], maxReplicaCount: 4}
`)
	f := serveConfig(t, objs)
	if tg := f.Targets[0]; !tg.Apply || !tg.PodDeletionCost {
		t.Errorf("target apply %v, pod_deletion_cost %v: want both true", tg.Apply, tg.PodDeletionCost)
	}
	want := map[rule]bool{
		{"llm", "apps", "deployments/scale", "get,update"}: false,
		{"llm", "", "pods", "list,watch,patch"}:            false,
	}
	for _, r := range rules(objs) {
		if _, ok := want[r]; ok {
			want[r] = true
		}
	}
	for r, found := range want {
		if !found {
			t.Errorf("no rule %v among %v", r, rules(objs))
		}
	}
}

// TestTargetWithoutConfig: a targets[] entry without config and without
// a ScaledObject (whose template asks for config.maxReplicaCount) failed
// the render with a template type error, "configmap.yaml:38:40 ...
// <.config>: wrong type for value; expected map[string]interface {}; got
// interface {}", naming neither the target nor the key. Refused naming
// both (a config that is no mapping the schema refuses).
func TestTargetWithoutConfig(t *testing.T) {
	values := "targets:\n- {name: chat, workload: {namespace: llm, name: chat}, scaledObject: {enabled: false}}\n"
	_, err := tryRender(values)
	want := "targets[chat].config: required, serve's target for it"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("values %q: error %v, want one containing %q", values, err, want)
	}
}
