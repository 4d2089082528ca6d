package charttest

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/yaml"
)

// The standard knobs of KEDA's and kube-state-metrics' charts, each set
// and found where the Kubernetes API reads it.

func podSpec(t *testing.T, objs []object) corev1.PodSpec {
	t.Helper()
	return only[*appsv1.Deployment](t, objs).Spec.Template.Spec
}

// TestImageTagDefaultsToAppVersion: image.tag empty is Chart.yaml's
// appVersion; a tag given is used as is.
func TestImageTagDefaultsToAppVersion(t *testing.T) {
	b, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		AppVersion string `json:"appVersion"`
	}
	if err := yaml.Unmarshal(b, &chart); err != nil || chart.AppVersion == "" {
		t.Fatalf("Chart.yaml appVersion %q: %v", chart.AppVersion, err)
	}
	if got := podSpec(t, render(t, "")).Containers[0].Image; got != "infscale/infscale:"+chart.AppVersion {
		t.Errorf("default image %q, want infscale/infscale:%s", got, chart.AppVersion)
	}
	if got := podSpec(t, render(t, `image: {repository: registry.example.com/infscale, tag: "0.2.0"}`)).Containers[0].Image; got != "registry.example.com/infscale:0.2.0" {
		t.Errorf("image %q, want registry.example.com/infscale:0.2.0", got)
	}
}

// names returns kind/name of every rendered object.
func names(objs []object) map[string]string {
	out := map[string]string{}
	for _, o := range objs {
		out[o.meta.Kind+" "+o.obj.(metav1.Object).GetName()] = o.source
	}
	return out
}

// TestNames: objects are named after a release containing "infscale",
// else <release>-infscale; fullnameOverride names them all, nameOverride
// replaces "infscale" in both the names and the app.kubernetes.io/name
// label; every reference follows (config volume, Role bindings, Lease).
func TestNames(t *testing.T) {
	for _, c := range []struct {
		release, values, name, label string
	}{
		{"infscale", "", "infscale", "infscale"},
		{"prod", "", "prod-infscale", "infscale"},
		{"prod", "fullnameOverride: scaler", "scaler", "infscale"},
		{"prod", "nameOverride: rec", "prod-rec", "rec"},
	} {
		objs, err := tryRenderRelease(c.release, c.values+"\nrbac: {modes: [apply, leases]}\nreplicas: 2")
		if err != nil {
			t.Fatalf("release %s, %q: %v", c.release, c.values, err)
		}
		got := names(objs)
		for _, want := range []string{"ConfigMap", "Deployment", "Service", "ServiceMonitor", "ServiceAccount", "RoleBinding"} {
			if _, ok := got[want+" "+c.name]; !ok {
				t.Errorf("release %s, %q: no %s %s in %v", c.release, c.values, want, c.name, got)
			}
		}
		if _, ok := got["Role "+c.name+"-leases"]; !ok {
			t.Errorf("release %s, %q: no Role %s-leases in %v", c.release, c.values, c.name, got)
		}
		d := only[*appsv1.Deployment](t, objs)
		spec := d.Spec.Template.Spec
		if spec.Volumes[0].ConfigMap.Name != c.name || spec.ServiceAccountName != c.name ||
			!strings.Contains(strings.Join(spec.Containers[0].Args, " "), "--leader-elect-resource-name="+c.name+" ") {
			t.Errorf("release %s, %q: config volume %q, serviceAccountName %q, args %q; want %s", c.release, c.values,
				spec.Volumes[0].ConfigMap.Name, spec.ServiceAccountName, spec.Containers[0].Args, c.name)
		}
		wantSel := map[string]string{"app.kubernetes.io/name": c.label, "app.kubernetes.io/instance": c.release}
		if !reflect.DeepEqual(d.Spec.Selector.MatchLabels, wantSel) || !reflect.DeepEqual(only[*corev1.Service](t, objs).Spec.Selector, wantSel) ||
			d.Spec.Template.Labels["app.kubernetes.io/name"] != c.label {
			t.Errorf("release %s, %q: selectors %v / %v, pod labels %v; want %v", c.release, c.values, d.Spec.Selector.MatchLabels,
				only[*corev1.Service](t, objs).Spec.Selector, d.Spec.Template.Labels, wantSel)
		}
		for _, rb := range every[*rbacv1.RoleBinding](objs) {
			if rb.Subjects[0].Name != c.name {
				t.Errorf("release %s: RoleBinding %s binds %q, want %s", c.release, rb.Name, rb.Subjects[0].Name, c.name)
			}
		}
	}
}

// TestPodKnobs: pull secrets, scheduling, pod metadata, and extra args,
// env and volumes reach the pod; a Secret mounted with extraVolumes holds
// the password_file and ca_file the Prometheus config names
// (examples/serve-prometheus.yaml).
func TestPodKnobs(t *testing.T) {
	objs := render(t, `
keda: {serverAddress: 'http://prometheus-operated.monitoring.svc:9090'}
prometheus:
  url: https://prom.example:9090
  basic_auth: {username: infscale, password_file: /etc/infscale-auth/password}
  tls_config: {ca_file: /etc/infscale-auth/ca.crt}
imagePullSecrets: [{name: regcred}]
priorityClassName: system-cluster-critical
nodeSelector: {kubernetes.io/os: linux}
tolerations: [{key: dedicated, operator: Equal, value: control, effect: NoSchedule}]
affinity:
  nodeAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      nodeSelectorTerms: [{matchExpressions: [{key: pool, operator: In, values: [system]}]}]
podAnnotations: {example.com/team: ml}
podLabels: {team: ml}
extraArgs: [--log-level=debug]
extraEnv: [{name: GOMEMLIMIT, value: 100MiB}]
extraVolumes: [{name: prometheus-auth, secret: {secretName: prometheus-auth}}]
extraVolumeMounts: [{name: prometheus-auth, mountPath: /etc/infscale-auth, readOnly: true}]
`)
	d := only[*appsv1.Deployment](t, objs)
	spec := d.Spec.Template.Spec
	c := spec.Containers[0]
	if len(spec.ImagePullSecrets) != 1 || spec.ImagePullSecrets[0].Name != "regcred" {
		t.Errorf("imagePullSecrets %+v", spec.ImagePullSecrets)
	}
	if spec.PriorityClassName != "system-cluster-critical" || spec.NodeSelector["kubernetes.io/os"] != "linux" {
		t.Errorf("priorityClassName %q nodeSelector %v", spec.PriorityClassName, spec.NodeSelector)
	}
	if len(spec.Tolerations) != 1 || spec.Tolerations[0].Key != "dedicated" || spec.Tolerations[0].Effect != corev1.TaintEffectNoSchedule {
		t.Errorf("tolerations %+v", spec.Tolerations)
	}
	if a := spec.Affinity; a == nil || a.NodeAffinity == nil ||
		a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Values[0] != "system" {
		t.Errorf("affinity %+v", a)
	}
	meta := d.Spec.Template.ObjectMeta
	if meta.Annotations["example.com/team"] != "ml" || meta.Annotations["checksum/config"] == "" || meta.Labels["team"] != "ml" {
		t.Errorf("pod annotations %v labels %v; want team and the config checksum", meta.Annotations, meta.Labels)
	}
	if want := map[string]string{"app.kubernetes.io/name": "infscale", "app.kubernetes.io/instance": "infscale"}; !reflect.DeepEqual(d.Spec.Selector.MatchLabels, want) {
		t.Errorf("selector %v: pod labels must not reach it", d.Spec.Selector.MatchLabels)
	}
	if want := []string{"serve", "--config=/etc/infscale/infscale.yaml", "--log-level=debug"}; !reflect.DeepEqual(c.Args, want) {
		t.Errorf("args %q, want %q", c.Args, want)
	}
	if len(c.Env) != 1 || c.Env[0].Name != "GOMEMLIMIT" || c.Env[0].Value != "100MiB" {
		t.Errorf("env %+v", c.Env)
	}
	if n := len(spec.Volumes); n != 3 || spec.Volumes[2].Secret == nil || spec.Volumes[2].Secret.SecretName != "prometheus-auth" {
		t.Errorf("volumes %+v, want config, tmp and the Secret", spec.Volumes)
	}
	var mount string
	for _, m := range c.VolumeMounts {
		if m.Name == "prometheus-auth" {
			mount = m.MountPath
		}
	}
	f := serveConfig(t, objs)
	if f.Prometheus.BasicAuth == nil {
		t.Fatalf("config: no basic_auth in %+v", f.Prometheus)
	}
	if mount == "" || !strings.HasPrefix(f.Prometheus.BasicAuth.PasswordFile, mount+"/") || !strings.HasPrefix(f.Prometheus.TLSConfig.CAFile, mount+"/") {
		t.Errorf("mount %q; config password_file %q ca_file %q: want both in the mount", mount, f.Prometheus.BasicAuth.PasswordFile, f.Prometheus.TLSConfig.CAFile)
	}
}

// TestServiceAccount: annotations alone give the pods an account (workload
// identity) without a token; create: false uses an existing account,
// which the RoleBindings bind; it needs a name.
func TestServiceAccount(t *testing.T) {
	objs := render(t, `serviceAccount: {annotations: {iam.gke.io/gcp-service-account: infscale@p.iam.gserviceaccount.com}}`)
	sa := only[*corev1.ServiceAccount](t, objs)
	spec := podSpec(t, objs)
	if sa.Name != "infscale" || sa.Annotations["iam.gke.io/gcp-service-account"] != "infscale@p.iam.gserviceaccount.com" ||
		spec.ServiceAccountName != "infscale" || *spec.AutomountServiceAccountToken || len(every[*rbacv1.Role](objs)) != 0 {
		t.Errorf("SA %s %v, pod account %q automount %v, %d Roles; want the annotated account, no token, no Role",
			sa.Name, sa.Annotations, spec.ServiceAccountName, *spec.AutomountServiceAccountToken, len(every[*rbacv1.Role](objs)))
	}

	objs = render(t, userValues("[read-only]")+"serviceAccount: {create: false, name: existing}\n")
	spec = podSpec(t, objs)
	if n := len(every[*corev1.ServiceAccount](objs)); n != 0 || spec.ServiceAccountName != "existing" || !*spec.AutomountServiceAccountToken {
		t.Errorf("%d ServiceAccounts, pod account %q automount %v; want none created, existing, a token", n, spec.ServiceAccountName, *spec.AutomountServiceAccountToken)
	}
	for _, rb := range every[*rbacv1.RoleBinding](objs) {
		if rb.Subjects[0].Name != "existing" || rb.Subjects[0].Namespace != "infscale" {
			t.Errorf("RoleBinding %s/%s binds %+v, want infscale/existing", rb.Namespace, rb.Name, rb.Subjects[0])
		}
	}

	objs = render(t, userValues("[read-only]")+"serviceAccount: {name: custom}\n")
	if sa := only[*corev1.ServiceAccount](t, objs); sa.Name != "custom" || podSpec(t, objs).ServiceAccountName != "custom" {
		t.Errorf("SA %q, pod account %q; want custom", sa.Name, podSpec(t, objs).ServiceAccountName)
	}

	if _, err := tryRender(userValues("[read-only]") + "serviceAccount: {create: false}\n"); err == nil || !strings.Contains(err.Error(), "serviceAccount.name: required with serviceAccount.create: false") {
		t.Errorf("create: false without a name: error %v", err)
	}
}

// TestPodDisruptionBudget: none by default; podDisruptionBudget's spec over
// the Deployment's pods; both keys, or a minAvailable that blocks every
// eviction, fail the render.
func TestPodDisruptionBudget(t *testing.T) {
	if n := len(every[*policyv1.PodDisruptionBudget](render(t, ""))); n != 0 {
		t.Errorf("%d PodDisruptionBudgets by default, want 0", n)
	}
	objs := render(t, "replicas: 2\nrbac: {modes: [apply, leases]}\npodDisruptionBudget: {minAvailable: 1}")
	pdb := only[*policyv1.PodDisruptionBudget](t, objs)
	if pdb.Name != "infscale" || pdb.Namespace != "infscale" || pdb.Spec.MinAvailable == nil || *pdb.Spec.MinAvailable != intstr.FromInt32(1) || pdb.Spec.MaxUnavailable != nil ||
		!reflect.DeepEqual(pdb.Spec.Selector.MatchLabels, only[*appsv1.Deployment](t, objs).Spec.Selector.MatchLabels) {
		t.Errorf("PodDisruptionBudget %s/%s %+v; want minAvailable 1 over the Deployment's pods", pdb.Namespace, pdb.Name, pdb.Spec)
	}
	if pdb := only[*policyv1.PodDisruptionBudget](t, render(t, `podDisruptionBudget: {maxUnavailable: "50%"}`)); pdb.Spec.MaxUnavailable == nil || *pdb.Spec.MaxUnavailable != intstr.FromString("50%") {
		t.Errorf("maxUnavailable %v, want 50%%", pdb.Spec.MaxUnavailable)
	}
	// A pod that is not Ready has not decided yet: the budget lets a drain
	// evict it whatever the others' state (Kubernetes' IfHealthyBudget, the
	// API's default, held it while fewer than minAvailable were Ready).
	if p := pdb.Spec.UnhealthyPodEvictionPolicy; p == nil || *p != policyv1.AlwaysAllow {
		t.Errorf("unhealthyPodEvictionPolicy %v, want AlwaysAllow", p)
	}
	pdb = only[*policyv1.PodDisruptionBudget](t, render(t, "replicas: 2\npodDisruptionBudget: {minAvailable: 1, unhealthyPodEvictionPolicy: IfHealthyBudget}"))
	if p := pdb.Spec.UnhealthyPodEvictionPolicy; p == nil || *p != policyv1.IfHealthyBudget {
		t.Errorf("unhealthyPodEvictionPolicy %v, want the IfHealthyBudget given", p)
	}
	for _, c := range []struct{ values, want string }{
		{"podDisruptionBudget: {minAvailable: 1, maxUnavailable: 1}", "set minAvailable or maxUnavailable, not both"},
		{"podDisruptionBudget: {minAvailable: 1}", "podDisruptionBudget.minAvailable: 1 with replicas: 1 would block every voluntary eviction"},
		{"replicas: 2\npodDisruptionBudget: {minAvailable: 1, unhealthyPodEvictionPolicy: Always}", "at '/podDisruptionBudget/unhealthyPodEvictionPolicy'"},
	} {
		if _, err := tryRender(c.values); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.values, err, c.want)
		}
	}
}

// TestPrometheusURLOnce: prometheus.url is also KEDA's server unless
// keda.serverAddress names another; with neither, a ScaledObject cannot be
// rendered.
func TestPrometheusURLOnce(t *testing.T) {
	server := func(objs []object) string {
		return only[*kedav1alpha1.ScaledObject](t, objs).Spec.Triggers[0].Metadata["serverAddress"]
	}
	if got := server(render(t, "prometheus: {url: http://prom.example:9090}")); got != "http://prom.example:9090" {
		t.Errorf("serverAddress %q, want prometheus.url http://prom.example:9090", got)
	}
	objs := render(t, "prometheus: {url: http://prom.example:9090}\nkeda: {serverAddress: http://thanos.example:9090}")
	if got, url := server(objs), serveConfig(t, objs).Prometheus.URL; got != "http://thanos.example:9090" || url != "http://prom.example:9090" {
		t.Errorf("serverAddress %q, config url %q; want thanos for KEDA, prom for serve", got, url)
	}
	if _, err := tryRender("prometheus: {url: null}"); err == nil || !strings.Contains(err.Error(), "keda.serverAddress: the Prometheus KEDA reads") {
		t.Errorf("no URL anywhere: error %v", err)
	}
}

// TestPodMonitor: off by default; enabled, the target's PodMonitor is
// deploy/vllm's (same selector, port, path, interval) in the workload's
// namespace with podMonitor.labels; enabled without a selector fails.
func TestPodMonitor(t *testing.T) {
	if n := len(every[*monitoringv1.PodMonitor](render(t, ""))); n != 0 {
		t.Errorf("%d PodMonitors by default, want 0", n)
	}
	objs := render(t, strings.Replace(userValues("[]"), "name: chat}\n  scaledObject: {enabled: true}",
		"name: chat}\n  scaledObject: {enabled: true}\n  podMonitor: {enabled: true, selector: {matchLabels: {app.kubernetes.io/name: vllm}}, port: http}", 1)+
		"podMonitor: {path: /metrics, interval: 15s, labels: {release: kps}}\n")
	pm := only[*monitoringv1.PodMonitor](t, objs)
	want := readBase[monitoringv1.PodMonitor](t, "vllm/podmonitor.yaml")
	if pm.Namespace != "llm" || pm.Name != "infscale-chat" || pm.Labels["release"] != "kps" || !reflect.DeepEqual(pm.Spec, want.Spec) {
		a, _ := yaml.Marshal(pm.Spec)
		b, _ := yaml.Marshal(want.Spec)
		t.Errorf("PodMonitor %s/%s labels %v; spec:\n%s\ndeploy/vllm's:\n%s", pm.Namespace, pm.Name, pm.Labels, a, b)
	}
	if _, err := tryRender("targets:\n- {name: chat, workload: {namespace: llm, apiVersion: apps/v1, kind: Deployment, name: chat}, podMonitor: {enabled: true}, scaledObject: {enabled: false}, config: {server: vllm, maxReplicaCount: 4}}"); err == nil ||
		!strings.Contains(err.Error(), "targets[chat].podMonitor.selector") {
		t.Errorf("podMonitor without a selector: error %v", err)
	}
	// A PodMonitor endpoint's port is the container port's name (a
	// string in the CRD): the schema took a number, rendered `port: 8000`,
	// and the API server refused the PodMonitor at apply. It is refused at
	// render naming the value.
	if _, err := tryRender("targets:\n- {name: chat, workload: {namespace: llm, name: chat}, podMonitor: {enabled: true, selector: {matchLabels: {app: vllm}}, port: 8000}, config: {maxReplicaCount: 4}}"); err == nil ||
		!strings.Contains(err.Error(), "at '/targets/0/podMonitor/port': got number, want string") {
		t.Errorf("podMonitor.port 8000: error %v, want the schema naming /targets/0/podMonitor/port", err)
	}
	// serve allows the target name Chat_1, no Kubernetes object may be
	// named infscale-Chat_1: the PodMonitor rendered and the API server
	// refused it. The render names the target and a name that works.
	if _, err := tryRender("targets:\n- {name: Chat_1, workload: {namespace: llm, name: chat}, podMonitor: {enabled: true, selector: {matchLabels: {app: vllm}}, port: http}, config: {maxReplicaCount: 4}}"); err == nil ||
		!strings.Contains(err.Error(), `targets[Chat_1].podMonitor: its PodMonitor would be named "infscale-Chat_1", which is not a Kubernetes object name`) || !strings.Contains(err.Error(), `(e.g. "chat-1")`) {
		t.Errorf("podMonitor of target Chat_1: error %v", err)
	}
}

// TestPodDisruptionBudgetPercentages: a budget that lets no pod go blocks
// every node drain; the render refused an integer minAvailable at or above
// replicas but let the same budget through as a percentage or as
// maxUnavailable 0. Percentages scale to the replicas rounding up, as the
// disruption controller does; worked by hand for replicas 2: minAvailable
// 100% is 2 and 51% is ceil(1.02) = 2 (both refused), 50% is 1 (renders);
// maxUnavailable 0 and 0% are 0 (refused), 1% is ceil(0.02) = 1
// (renders); "abc" is neither form.
func TestPodDisruptionBudgetPercentages(t *testing.T) {
	const two = "replicas: 2\nrbac: {modes: [leases]}\n"
	for _, c := range []struct{ pdb, want string }{
		{`{minAvailable: "100%"}`, "podDisruptionBudget.minAvailable: 100% with replicas: 2 would block every voluntary eviction"},
		{`{minAvailable: "51%"}`, "podDisruptionBudget.minAvailable: 51% with replicas: 2 would block every voluntary eviction"},
		{`{maxUnavailable: 0}`, "podDisruptionBudget.maxUnavailable: 0 lets no pod go"},
		{`{maxUnavailable: "0%"}`, "podDisruptionBudget.maxUnavailable: 0% lets no pod go"},
		{`{minAvailable: "abc"}`, `podDisruptionBudget.minAvailable: "abc" is neither a number nor a percentage`},
	} {
		if _, err := tryRender(two + "podDisruptionBudget: " + c.pdb); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.pdb, err, c.want)
		}
	}
	for _, pdb := range []string{`{minAvailable: "50%"}`, `{maxUnavailable: "1%"}`, `{maxUnavailable: 1}`, `{minAvailable: 1}`} {
		if _, err := tryRender(two + "podDisruptionBudget: " + pdb); err != nil {
			t.Errorf("%s with replicas 2: %v, want it rendered", pdb, err)
		}
	}
}

// TestLeaseName: with rbac.modes [leases] the chart passes the Lease's
// name, the objects' name: release prod gives prod-infscale (docs/chart.md
// said the Lease was <release>, prod), release infscale gives infscale.
func TestLeaseName(t *testing.T) {
	for release, want := range map[string]string{"prod": "prod-infscale", "infscale": "infscale"} {
		objs, err := tryRenderRelease(release, "replicas: 2\nrbac: {modes: [leases]}\n")
		if err != nil {
			t.Fatal(err)
		}
		if args := podSpec(t, objs).Containers[0].Args; !slices.Contains(args, "--leader-elect-resource-name="+want) {
			t.Errorf("release %s: args %v, want --leader-elect-resource-name=%s", release, args, want)
		}
	}
	doc, err := os.ReadFile("../../docs/chart.md")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(doc), "with the Lease named as the chart's objects (`<release>-infscale`, or the release's name when it contains `infscale`") {
		t.Error("docs/chart.md does not name the Lease as the chart's objects")
	}
}

// TestSchemaShapes: an imagePullSecrets entry written as a bare string
// (`[regcred]`, not `[{name: regcred}]`) and a keda.serverAddress without
// its scheme fail the render at the schema, not the pod's admission or
// KEDA's first query, and so does a prometheus.url without its scheme
// that the ScaledObjects read (it rendered, and only the config check's
// hook refused it, or serve at start with the check off); the documented
// forms render.
func TestSchemaShapes(t *testing.T) {
	for _, c := range []struct{ values, want string }{
		{"imagePullSecrets: [regcred]\n", "imagePullSecrets"},
		{"imagePullSecrets: [{}]\n", "imagePullSecrets"},
		{"keda: {serverAddress: prometheus-operated.monitoring.svc:9090}\n", "serverAddress"},
		// prometheus.url is KEDA's serverAddress when keda.serverAddress is empty.
		{"prometheus: {url: prometheus-operated.monitoring.svc:9090}\n", `prometheus.url: "prometheus-operated.monitoring.svc:9090" is also the ScaledObjects' serverAddress`},
	} {
		if _, err := tryRender(c.values); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one naming %s", c.values, err, c.want)
		}
	}
	for _, v := range []string{"imagePullSecrets: [{name: regcred}]\n", "keda: {serverAddress: http://prometheus-operated.monitoring.svc:9090}\n"} {
		if _, err := tryRender(v); err != nil {
			t.Errorf("%q: %v, want it rendered", v, err)
		}
	}
}

// TestSchemaRanges: values the API server or KEDA refuse at apply, or the
// chart would silently replace, are refused at render naming the key.
// replicas: -1 rendered a Deployment the API server refuses;
// scaledObject.pollingInterval: 0 rendered pollingInterval 15 (Helm's
// default takes 0 for unset), and a role's 0 left scaledObject's value in
// place; a negative fallback.failureThreshold KEDA refuses. replicas 0
// (serve stopped) and failureThreshold 0 (fallback at the first failure)
// are valid and render.
func TestSchemaRanges(t *testing.T) {
	const target = "targets:\n- {name: chat, workload: {namespace: llm, name: chat}, scaledObject: %s, config: {maxReplicaCount: 8}}\n"
	for _, c := range []struct{ values, want string }{
		{"replicas: -1\n", "at '/replicas': minimum: got -1, want 0"},
		{fmt.Sprintf(target, "{pollingInterval: 0}"), "at '/targets/0/scaledObject/pollingInterval': minimum: got 0, want 1"},
		{fmt.Sprintf(target, "{fallback: {failureThreshold: -1}}"), "at '/targets/0/scaledObject/fallback/failureThreshold': minimum: got -1, want 0"},
		{pairValues("{decode: {pollingInterval: 0}}", "[]"), "at '/targets/0/scaledObject/decode/pollingInterval': minimum: got 0, want 1"},
		{pairValues("{prefill: {fallback: {failureThreshold: -3}}}", "[]"), "at '/targets/0/scaledObject/prefill/fallback/failureThreshold': minimum: got -3, want 0"},
	} {
		if _, err := tryRender(c.values); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.values, err, c.want)
		}
	}
	if got := *only[*appsv1.Deployment](t, render(t, "replicas: 0\n")).Spec.Replicas; got != 0 {
		t.Errorf("replicas: 0 rendered %d", got)
	}
	so := only[*kedav1alpha1.ScaledObject](t, render(t, fmt.Sprintf(target, "{pollingInterval: 1, fallback: {failureThreshold: 0}}")))
	if *so.Spec.PollingInterval != 1 || so.Spec.Fallback.FailureThreshold != 0 {
		t.Errorf("pollingInterval 1, failureThreshold 0: rendered %d, %d", *so.Spec.PollingInterval, so.Spec.Fallback.FailureThreshold)
	}
}

// TestResourcesSchema: resources and tune.resources are a container's
// resources, checked key by key. They were any object: `resources: {limit:
// {memory: 1Gi}}` (limit for limits) rendered, and the API server drops an
// unknown field, so serve ran without its memory limit (and GOMEMLIMIT);
// a quantity the API server cannot parse (512MB) failed the install on
// the Deployment, not on the value. Both are refused at render naming the
// key; the defaults and quantities as numbers (cpu: 0.5) still render.
func TestResourcesSchema(t *testing.T) {
	for _, c := range []struct{ values, want string }{
		{"resources: {limit: {memory: 1Gi}}\n", "at '/resources': additional properties 'limit' not allowed"},
		{"tune: {resources: {request: {cpu: 2}}}\n", "at '/tune/resources': additional properties 'request' not allowed"},
		{"resources: {limits: {memory: 512MB}}\n", "at '/resources/limits/memory'"},
		{"tune: {resources: {requests: {cpu: []}}}\n", "at '/tune/resources/requests/cpu': got array, want number or string"},
	} {
		if _, err := tryRender(c.values); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.values, err, c.want)
		}
	}
	res := podSpec(t, render(t, "resources: {requests: {cpu: 0.5, memory: 64Mi}, limits: {memory: 1e9}}\n")).Containers[0].Resources
	if res.Requests.Cpu().MilliValue() != 500 || res.Requests.Memory().String() != "64Mi" || res.Limits.Memory().Value() != 1000000000 {
		t.Errorf("resources rendered %+v, want requests cpu 500m memory 64Mi, limits memory 1e9", res)
	}
}

// TestPodListsSchema: extraEnv, extraVolumes and extraVolumeMounts are
// the pod spec's lists, and workload.namespace a namespace's name. They
// were any array or string: an env var or a volume without its name, a
// mount without mountPath or with a relative one, a namespace "LLM"
// rendered, and the install failed at the API server naming a Deployment
// or Role field instead of the value. The render refuses each, naming it.
func TestPodListsSchema(t *testing.T) {
	for _, c := range []struct{ values, want string }{
		{"extraEnv: [{value: debug}]\n", "at '/extraEnv/0': missing property 'name'"},
		{"extraVolumes: [{secret: {secretName: auth}}]\n", "at '/extraVolumes/0': missing property 'name'"},
		{"extraVolumeMounts: [{name: auth}]\n", "at '/extraVolumeMounts/0': missing property 'mountPath'"},
		{"extraVolumeMounts: [{name: auth, mountPath: etc/auth}]\n", "at '/extraVolumeMounts/0/mountPath'"},
		{"targets:\n- {name: chat, workload: {namespace: LLM, name: chat}, config: {maxReplicaCount: 8}}\n", "at '/targets/0/workload/namespace'"},
	} {
		if _, err := tryRender(c.values); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.values, err, c.want)
		}
	}
	ps := podSpec(t, render(t, "extraEnv: [{name: GODEBUG, value: 'http2client=0'}]\nextraVolumes: [{name: auth, secret: {secretName: auth}}]\nextraVolumeMounts: [{name: auth, mountPath: /etc/auth, readOnly: true}]\n"))
	if env := ps.Containers[0].Env; len(env) != 1 || env[0].Name != "GODEBUG" || ps.Volumes[len(ps.Volumes)-1].Name != "auth" || ps.Containers[0].VolumeMounts[len(ps.Containers[0].VolumeMounts)-1].MountPath != "/etc/auth" {
		t.Errorf("env %+v volumes %+v mounts %+v", env, ps.Volumes, ps.Containers[0].VolumeMounts)
	}
}

// TestExtraVolumesCollisions: an extra volume named as one of the chart's
// (config, tmp, tune-results) or an extra mount at one of its mountPaths
// (/etc/infscale, /tmp, tune.results.path with tune.enabled) rendered a pod
// the API server refuses (a duplicate name or mountPath). The render
// refuses it naming the value; /etc/infscale-auth (docs/chart.md's) renders.
func TestExtraVolumesCollisions(t *testing.T) {
	for _, c := range []struct{ values, want string }{
		{"extraVolumes: [{name: config, secret: {secretName: auth}}]\n", `extraVolumes: "config" is the name of one of the chart's volumes`},
		{"extraVolumes: [{name: tune-results, emptyDir: {}}]\n", `extraVolumes: "tune-results" is the name of one of the chart's volumes`},
		{"extraVolumes: [{name: auth, secret: {secretName: auth}}]\nextraVolumeMounts: [{name: auth, mountPath: /etc/infscale/}]\n", "extraVolumeMounts: mountPath /etc/infscale/ is where the chart mounts its own"},
		{"extraVolumes: [{name: auth, emptyDir: {}}]\nextraVolumeMounts: [{name: auth, mountPath: /tmp}]\n", "extraVolumeMounts: mountPath /tmp is where the chart mounts its own"},
		{"tune: {enabled: true, results: {claimName: tune-results}}\n" + tunedTarget + "extraVolumes: [{name: r, emptyDir: {}}]\nextraVolumeMounts: [{name: r, mountPath: /var/lib/infscale/tune}]\n", "extraVolumeMounts: mountPath /var/lib/infscale/tune is where the chart mounts its own"},
	} {
		if _, err := tryRender(c.values); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.values, err, c.want)
		}
	}
	render(t, "extraVolumes: [{name: prometheus-auth, secret: {secretName: prometheus-auth}}]\nextraVolumeMounts: [{name: prometheus-auth, mountPath: /etc/infscale-auth, readOnly: true}]\n")
}

// TestNullBlocksRefused: `KEY: null` in a values file deletes the chart's
// default for KEY (Helm's way to unset a value). The templates read these
// blocks, so each such values file failed with a template crash ("nil
// pointer evaluating interface {}.enabled"), and `targets: null` even
// rendered a config with no target, which serve refuses at start. The
// schema requires them, so the render names the value instead;
// prometheus: {url: null} (embedded mode) still renders.
func TestNullBlocksRefused(t *testing.T) {
	for _, c := range []struct{ values, want string }{
		{"targets: null\n", "at '': missing property 'targets'"},
		{"prometheus: null\n", "at '': missing property 'prometheus'"},
		{"tune: null\n", "at '': missing property 'tune'"},
		{"serviceMonitor: null\n", "at '': missing property 'serviceMonitor'"},
		{"configCheck: null\n", "at '': missing property 'configCheck'"},
		{"image: null\n", "at '': missing property 'image'"},
		{"rbac: null\n", "at '': missing property 'rbac'"},
		{"tune: {results: null}\n", "at '/tune': missing property 'results'"},
	} {
		if _, err := tryRender(c.values); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.values, err, c.want)
		}
	}
}

// TestNameOverridesSchema: fullnameOverride names every object (the
// Service's name must be a DNS label) and nameOverride is part of them and
// of the app.kubernetes.io/name label; "Infscale_Prod" rendered objects
// the API server refuses. The schema names the value; "infscale-prod" renders.
func TestNameOverridesSchema(t *testing.T) {
	for _, c := range []struct{ values, want string }{
		{"fullnameOverride: Infscale_Prod\n", "at '/fullnameOverride'"},
		{"nameOverride: infscale.prod\n", "at '/nameOverride'"},
	} {
		if _, err := tryRender(c.values); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.values, err, c.want)
		}
	}
	if n := only[*appsv1.Deployment](t, render(t, "fullnameOverride: infscale-prod\n")).Name; n != "infscale-prod" {
		t.Errorf("fullnameOverride infscale-prod: Deployment %q", n)
	}
}

// TestPollingIntervalSchema: the chart's pollingInterval (and its old name
// interval) is serve's decision period, a Prometheus duration or integer
// seconds (docs/config.md). Any string rendered: `pollingInterval: 15
// seconds` reached the ConfigMap and was refused only by the config check's
// hook (or, with the check off, by serve at start, crash-looping). A
// malformed one is refused at render naming the value; integer seconds
// are checked against serve's 1 s to 1 h. Accepted forms load through
// serve's own loader as the period worked out by hand.
func TestPollingIntervalSchema(t *testing.T) {
	for _, c := range []struct{ values, want string }{
		{"pollingInterval: 15 seconds\n", "at '/pollingInterval': '15 seconds' does not match pattern"},
		{"pollingInterval: 1.5m\n", "at '/pollingInterval': '1.5m' does not match pattern"},
		{"pollingInterval: -15s\n", "at '/pollingInterval': '-15s' does not match pattern"},
		{"pollingInterval: ''\n", "at '/pollingInterval'"},
		{"pollingInterval: 0\n", "at '/pollingInterval': minimum: got 0, want 1"},
		{"pollingInterval: 3601\n", "at '/pollingInterval': maximum: got 3,601, want 3,600"},
		{"interval: 30 s\n", "at '/interval': '30 s' does not match pattern"},
	} {
		if _, err := tryRender(c.values); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.values, err, c.want)
		}
	}
	for _, c := range []struct {
		values string
		want   time.Duration
	}{
		{"pollingInterval: 30\n", 30 * time.Second},
		{"pollingInterval: '15'\n", 15 * time.Second},
		{"pollingInterval: 1m30s\n", 90 * time.Second},
		{"pollingInterval: 3600\n", time.Hour},
	} {
		if got := serveConfig(t, render(t, c.values)).IntervalDuration(); got != c.want {
			t.Errorf("%q: serve's period %v, want %v", c.values, got, c.want)
		}
	}
}

// TestWorkloadRefSchema: a workload's apiVersion, kind and resource are
// refused at render when they are not the API's spelling. `kind:
// deployment` rendered: the ScaledObject's scaleTargetRef named a kind KEDA
// does not find (kinds are case-sensitive), and without rbac.modes no
// serve config carried it for the config check to refuse; an apiVersion
// with no version (`apps`) likewise. The spellings of real workloads
// render: apps/v1 StatefulSet, leaderworkerset.x-k8s.io/v1
// LeaderWorkerSet, argoproj.io/v1alpha1 Rollout (resource rollouts).
func TestWorkloadRefSchema(t *testing.T) {
	const target = "targets:\n- {name: chat, workload: {namespace: llm, name: chat, %s}, config: {selector: '{pod=~\"chat-.*\"}', metrics: [{type: queue, target: 24}], maxReplicaCount: 8}}\n"
	for _, c := range []struct{ values, want string }{
		{fmt.Sprintf(target, "kind: deployment"), "at '/targets/0/workload/kind': 'deployment' does not match pattern"},
		{fmt.Sprintf(target, "apiVersion: apps"), "at '/targets/0/workload/apiVersion': 'apps' does not match pattern"},
		{fmt.Sprintf(target, "apiVersion: v1/apps"), "at '/targets/0/workload/apiVersion': 'v1/apps' does not match pattern"},
		{fmt.Sprintf(target, "kind: Rollout, apiVersion: argoproj.io/v1alpha1, resource: Rollouts"), "at '/targets/0/workload/resource': 'Rollouts' does not match pattern"},
		{strings.Replace(pairValues("", "[]"), "kind: Deployment, name: chat-decode", "kind: deployment, name: chat-decode", 1), "at '/targets/0/workload/decode/kind': 'deployment' does not match pattern"},
	} {
		if _, err := tryRender(c.values); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.values, err, c.want)
		}
	}
	for _, c := range []struct{ ref, apiVersion, kind string }{
		{"kind: StatefulSet", "apps/v1", "StatefulSet"},
		{"apiVersion: leaderworkerset.x-k8s.io/v1, kind: LeaderWorkerSet", "leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet"},
		{"apiVersion: argoproj.io/v1alpha1, kind: Rollout, resource: rollouts", "argoproj.io/v1alpha1", "Rollout"},
	} {
		ref := only[*kedav1alpha1.ScaledObject](t, render(t, fmt.Sprintf(target, c.ref))).Spec.ScaleTargetRef
		if ref.APIVersion != c.apiVersion || ref.Kind != c.kind || ref.Name != "chat" {
			t.Errorf("%s: scaleTargetRef %+v, want %s %s chat", c.ref, ref, c.apiVersion, c.kind)
		}
	}
}

// TestExtraArgsChartFlags: extraArgs that set a flag the chart sets from
// other values are refused at render naming the argument. They rendered:
// `--listen=0.0.0.0:8080` moved serve off port 9105, so the liveness probe
// failed and the pod crash-looped; `--leader-elect` without rbac.modes
// [leases] elected with no RBAC for the Lease: with no modes no token is
// mounted and serve exited at start (no Kubernetes client configuration),
// with others no replica could take the Lease and none exported
// infscale_desired_replicas (KEDA held the replicas in its fallback);
// `--leader-elect-lease-duration` without leases is exit 2 at start. serve's other flags pass through, and the Lease's timings with
// leases.
func TestExtraArgsChartFlags(t *testing.T) {
	for _, c := range []struct{ values, want string }{
		{"extraArgs: [--listen=0.0.0.0:8080]", `extraArgs[0]: "--listen=0.0.0.0:8080": --listen is set by the chart`},
		{"extraArgs: [--log-level=debug, --config, /etc/other.yaml]", `extraArgs[1]: "--config": --config is set by the chart`},
		{"extraArgs: [-c/etc/other.yaml]", `extraArgs[0]: "-c/etc/other.yaml": --config is set by the chart`},
		{"extraArgs: [--leader-elect]", `extraArgs[0]: "--leader-elect": --leader-elect is set by the chart (rbac.modes [leases]`},
		{"rbac: {modes: [leases]}\nextraArgs: [--leader-elect-resource-name=other]", `extraArgs[0]: "--leader-elect-resource-name=other": --leader-elect-resource-name is set by the chart`},
		{"extraArgs: [--check-config]", `extraArgs[0]: "--check-config": --check-config is set by the chart`},
		{"extraArgs: [--leader-elect-lease-duration=30s]", `extraArgs[0]: "--leader-elect-lease-duration=30s" needs --leader-elect, which the chart passes with rbac.modes [leases]`},
	} {
		if _, err := tryRender(c.values); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.values, err, c.want)
		}
	}
	args := podSpec(t, render(t, "rbac: {modes: [leases]}\nextraArgs: [--log-level=debug, --state-dir=/tmp/state, --leader-elect-lease-duration=30s]")).Containers[0].Args
	if want := []string{"--log-level=debug", "--state-dir=/tmp/state", "--leader-elect-lease-duration=30s"}; !slices.Equal(args[len(args)-3:], want) {
		t.Errorf("args %q, want them ending in %q", args, want)
	}
}

// TestHAValues renders docs/ha.md's chart values for two replicas as
// written: serve elects (--leader-elect, the Lease's Role), the budget
// keeps one of two, and the anti-affinity's selector picks serve's own
// pods (the Deployment's selector labels), so the two prefer two nodes.
func TestHAValues(t *testing.T) {
	doc, err := os.ReadFile("../../docs/ha.md")
	if err != nil {
		t.Fatal(err)
	}
	_, block, ok := strings.Cut(string(doc), "With the Helm chart")
	if ok {
		_, block, ok = strings.Cut(block, "```yaml\n")
	}
	if ok {
		block, _, ok = strings.Cut(block, "```")
	}
	if !ok {
		t.Fatal("docs/ha.md: no yaml block after \"With the Helm chart\"")
	}
	objs := render(t, block)
	spec := podSpec(t, objs)
	if !slices.Contains(spec.Containers[0].Args, "--leader-elect") {
		t.Errorf("args %v, want --leader-elect", spec.Containers[0].Args)
	}
	if pdb := only[*policyv1.PodDisruptionBudget](t, objs); pdb.Spec.MinAvailable == nil || pdb.Spec.MinAvailable.IntValue() != 1 {
		t.Errorf("PodDisruptionBudget %+v, want minAvailable 1", pdb.Spec)
	}
	terms := spec.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	if len(terms) != 1 || !reflect.DeepEqual(terms[0].PodAffinityTerm.LabelSelector.MatchLabels, only[*appsv1.Deployment](t, objs).Spec.Selector.MatchLabels) {
		t.Errorf("anti-affinity %+v, want one term on the Deployment's selector labels", terms)
	}
	if c := spec.TopologySpreadConstraints; len(c) != 1 || c[0].TopologyKey != "topology.kubernetes.io/zone" || c[0].LabelSelector == nil ||
		!reflect.DeepEqual(c[0].LabelSelector.MatchLabels, only[*appsv1.Deployment](t, objs).Spec.Selector.MatchLabels) {
		t.Errorf("topologySpreadConstraints %+v, want one over topology.kubernetes.io/zone on the Deployment's selector labels", c)
	}
}
