package charttest

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"sigs.k8s.io/yaml"
)

// pairValues is a prefill/decode pair target as deploy/llm-d/pd's config
// has it (chat: chat-prefill 1..8, chat-decode 1..16 in llm, each role's
// pods and replicas from Prometheus), its workloads named per role, with
// scaledObject (YAML flow mapping, "" for none) and the given RBAC modes.
func pairValues(scaledObject, modes string) string {
	v := `
rbac: {modes: ` + modes + `}
targets:
- name: chat
  workload:
    namespace: llm
    prefill: {apiVersion: apps/v1, kind: Deployment, name: chat-prefill}
    decode: {apiVersion: apps/v1, kind: Deployment, name: chat-decode}
`
	if scaledObject != "" {
		v += "  scaledObject: " + scaledObject + "\n"
	}
	return v + `  config:
    server: vllm
    replica: {gpu: h100-sxm, model: llama-3-8b}
    lookahead: 136s
    behavior: {scaleDown: {stabilizationWindowSeconds: 60}}
    roles:
      prefill:
        selector: '{namespace="llm", pod=~"chat-prefill-.*"}'
        replicas: 'kube_deployment_spec_replicas{namespace="llm",deployment="chat-prefill"}'
        metrics: [{type: demand, target: 0.9}, {type: ttft, target: 1.9s}, {type: queuewait, target: 380ms}]
        maxReplicaCount: 8
      decode:
        selector: '{namespace="llm", pod=~"chat-decode-.*"}'
        replicas: 'kube_deployment_spec_replicas{namespace="llm",deployment="chat-decode"}'
        metrics: [{type: demand, target: 0.9}]
        minReplicaCount: 2
        maxReplicaCount: 16
`
}

// scaledObjects maps the rendered ScaledObjects by name.
func scaledObjects(objs []object) map[string]*kedav1alpha1.ScaledObject {
	out := map[string]*kedav1alpha1.ScaledObject{}
	for _, so := range every[*kedav1alpha1.ScaledObject](objs) {
		out[so.Name] = so
	}
	return out
}

// TestPairScaledObjects: a prefill/decode pair target (config.roles) gets
// one ScaledObject per role, <name>-prefill and <name>-decode in
// workload.namespace, each scaling workload.<role> on
// max(infscale_desired_replicas{target="chat", role="<role>"}) (docs/metrics.md:
// a pair's series carry target and role) with the single target's
// trigger (AverageValue, threshold 1, no null as 0) and its role's
// bounds, which KEDA's own checks (ValidateTriggers, the bounds, the
// fallback) accept; the config is the user's, each role's replicas query kept.
func TestPairScaledObjects(t *testing.T) {
	objs := render(t, pairValues("", "[]"))
	sos := scaledObjects(objs)
	if len(sos) != 2 || sos["chat-prefill"] == nil || sos["chat-decode"] == nil {
		t.Fatalf("ScaledObjects %v, want chat-prefill and chat-decode", sos)
	}
	for _, c := range []struct {
		name, workload, role string
		min, max             int32
	}{
		{"chat-prefill", "chat-prefill", "prefill", 1, 8}, // prefill's minReplicaCount left out: serve's 1
		{"chat-decode", "chat-decode", "decode", 2, 16},
	} {
		so := sos[c.name]
		// KEDA's own admission checks that need no cluster.
		if err := kedav1alpha1.ValidateTriggers(so.Spec.Triggers); err != nil {
			t.Errorf("%s: KEDA ValidateTriggers: %v", c.name, err)
		}
		if err := kedav1alpha1.CheckReplicaCountBoundsAreValid(so); err != nil {
			t.Errorf("%s: KEDA CheckReplicaCountBoundsAreValid: %v", c.name, err)
		}
		if err := kedav1alpha1.CheckFallbackValid(so); err != nil {
			t.Errorf("%s: KEDA CheckFallbackValid: %v", c.name, err)
		}
		sp := so.Spec
		if so.Namespace != "llm" || sp.ScaleTargetRef.APIVersion != "apps/v1" || sp.ScaleTargetRef.Kind != "Deployment" || sp.ScaleTargetRef.Name != c.workload {
			t.Errorf("%s: in %q on %+v, want llm on apps/v1 Deployment %s", c.name, so.Namespace, sp.ScaleTargetRef, c.workload)
		}
		if *sp.MinReplicaCount != c.min || *sp.MaxReplicaCount != c.max || sp.CooldownPeriod != nil {
			t.Errorf("%s: range %d..%d cooldown %v, want %d..%d and none (no zero)", c.name, *sp.MinReplicaCount, *sp.MaxReplicaCount, sp.CooldownPeriod, c.min, c.max)
		}
		// fallback.replicas is max(min, 1), as for one target.
		if *sp.PollingInterval != 15 || sp.Fallback.FailureThreshold != 3 || sp.Fallback.Replicas != c.min || sp.Fallback.Behavior != "currentReplicas" {
			t.Errorf("%s: pollingInterval %d fallback %+v, want 15, 3 failures, %d replicas, currentReplicas", c.name, *sp.PollingInterval, sp.Fallback, c.min)
		}
		want := map[string]string{
			"serverAddress":    "http://prometheus-operated.monitoring.svc:9090",
			"query":            `max(infscale_desired_replicas{target="chat", role="` + c.role + `", namespace="infscale", service="infscale"})`,
			"threshold":        "1",
			"ignoreNullValues": "false",
		}
		if len(sp.Triggers) != 1 || sp.Triggers[0].Type != "prometheus" || sp.Triggers[0].MetricType != "AverageValue" || !reflect.DeepEqual(sp.Triggers[0].Metadata, want) {
			t.Errorf("%s: triggers %+v, want one prometheus AverageValue with %v", c.name, sp.Triggers, want)
		}
	}
	f := serveConfig(t, objs)
	if len(f.Targets) != 1 || !f.Targets[0].Pair() || f.Targets[0].Roles.Decode.Replicas == "" || f.Targets[0].Roles.Decode.ScaleTargetRef != nil || f.Targets[0].ScaleTargetRef != nil {
		t.Errorf("config %+v, want the pair chat with each role's replicas query and no scaleTargetRef", f.Targets)
	}
}

// TestPairMatchesKustomize: with deploy/llm-d/pd's values (its config's
// bounds, decode from 1) the chart's two ScaledObjects are
// deploy/llm-d/pd/scaledobjects.yaml's, the no-chart route; only the
// scaleTargetRef's apiVersion and kind (KEDA's default there) differ.
func TestPairMatchesKustomize(t *testing.T) {
	got := scaledObjects(render(t, strings.Replace(pairValues("", "[]"), "        minReplicaCount: 2\n", "", 1)))
	b, err := os.ReadFile(filepath.Join("..", "llm-d", "pd", "scaledobjects.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, doc := range strings.Split(string(b), "\n---\n") {
		var want kedav1alpha1.ScaledObject
		if err := yaml.UnmarshalStrict([]byte(doc), &want); err != nil {
			t.Fatalf("deploy/llm-d/pd/scaledobjects.yaml: %v", err)
		}
		n++
		so := got[want.Name]
		if so == nil || so.Namespace != want.Namespace {
			t.Errorf("%s/%s: not rendered (rendered %v)", want.Namespace, want.Name, got)
			continue
		}
		sp := so.Spec
		sp.ScaleTargetRef = &kedav1alpha1.ScaleTarget{Name: sp.ScaleTargetRef.Name}
		if !reflect.DeepEqual(sp, want.Spec) {
			a, _ := yaml.Marshal(sp)
			w, _ := yaml.Marshal(want.Spec)
			t.Errorf("%s differs from deploy/llm-d/pd's:\nchart:\n%s\ndeploy/llm-d/pd:\n%s", want.Name, a, w)
		}
	}
	if n != 2 || len(got) != 2 {
		t.Errorf("deploy/llm-d/pd has %d ScaledObjects, the chart %d; want 2 each", n, len(got))
	}
}

// TestPairScaledObjectOverrides: scaledObject's keys apply to both roles'
// ScaledObjects, scaledObject.<role>'s to that role's over them; enabled:
// false renders neither.
func TestPairScaledObjectOverrides(t *testing.T) {
	sos := scaledObjects(render(t, pairValues("{pollingInterval: 30, fallback: {failureThreshold: 5}, decode: {pollingInterval: 10}, prefill: {fallback: {failureThreshold: 2}}}", "[]")))
	for _, c := range []struct {
		name          string
		poll, failure int32
	}{
		{"chat-prefill", 30, 2},
		{"chat-decode", 10, 5},
	} {
		so := sos[c.name]
		if so == nil {
			t.Fatalf("no ScaledObject %s in %v", c.name, sos)
		}
		if *so.Spec.PollingInterval != c.poll || so.Spec.Fallback.FailureThreshold != c.failure {
			t.Errorf("%s: pollingInterval %d failureThreshold %d, want %d and %d", c.name, *so.Spec.PollingInterval, so.Spec.Fallback.FailureThreshold, c.poll, c.failure)
		}
	}
	if n := len(scaledObjects(render(t, pairValues("{enabled: false}", "[]")))); n != 0 {
		t.Errorf("enabled: false: %d ScaledObjects, want none", n)
	}
}

// TestPairKube: with rbac.modes each role's workload is its scaleTargetRef
// in serve's config (the target's namespace, each role's replicas query
// dropped: the scale subresource replaces it), and the Role in llm grants
// both workloads' scale subresources; with apply and the ScaledObjects
// off the pair applies itself.
func TestPairKube(t *testing.T) {
	values := strings.Replace(pairValues("{enabled: false}", "[apply]"), "decode: {apiVersion: apps/v1, kind: Deployment, name: chat-decode}",
		"decode: {apiVersion: leaderworkerset.x-k8s.io/v1, kind: LeaderWorkerSet, name: chat-decode}", 1)
	values = strings.Replace(values, "  config:\n", "  apply: true\n  config:\n", 1)
	objs := render(t, values)
	f := serveConfig(t, objs)
	tg := f.Targets[0]
	if !tg.Pair() || tg.Namespace != "llm" || !tg.Apply || tg.ScaleTargetRef != nil {
		t.Fatalf("target: pair %v namespace %q apply %v ref %+v; want the pair in llm, applying, no target scaleTargetRef", tg.Pair(), tg.Namespace, tg.Apply, tg.ScaleTargetRef)
	}
	p, d := tg.Roles.Prefill, tg.Roles.Decode
	if r := p.ScaleTargetRef; r == nil || r.APIVersion != "apps/v1" || r.Kind != "Deployment" || r.Name != "chat-prefill" || p.Replicas != "" || *p.Max != 8 {
		t.Errorf("prefill: ref %+v replicas %q max %d; want apps/v1 Deployment chat-prefill, no query, 8", r, p.Replicas, *p.Max)
	}
	if r := d.ScaleTargetRef; r == nil || r.APIVersion != "leaderworkerset.x-k8s.io/v1" || r.Kind != "LeaderWorkerSet" || r.Name != "chat-decode" || d.Replicas != "" || *d.Min != 2 || *d.Max != 16 {
		t.Errorf("decode: ref %+v replicas %q range %d..%d; want LeaderWorkerSet chat-decode, no query, 2..16", r, d.Replicas, *d.Min, *d.Max)
	}
	want := []rule{ // Prometheus mode: no pods
		{"llm", "apps", "deployments/scale", "get,update"},
		{"llm", "autoscaling", "horizontalpodautoscalers", "list,watch"},
		{"llm", "leaderworkerset.x-k8s.io", "leaderworkersets/scale", "get,update"},
	}
	sort.Slice(want, func(i, j int) bool { return fmt.Sprint(want[i]) < fmt.Sprint(want[j]) })
	if got := rules(objs); !reflect.DeepEqual(got, want) {
		t.Errorf("rules:\n got %v\nwant %v", got, want)
	}
	if n := len(scaledObjects(objs)); n != 0 {
		t.Errorf("%d ScaledObjects, want none", n)
	}
	// read-only with the ScaledObjects: KEDA scales, serve reads the scale.
	objs = render(t, pairValues("", "[read-only]"))
	if n := len(scaledObjects(objs)); n != 2 {
		t.Errorf("read-only: %d ScaledObjects, want 2", n)
	}
	if got := rules(objs); len(got) != 1 || got[0].resource != "deployments/scale" || got[0].verbs != "get" {
		t.Errorf("read-only: rules %v, want deployments/scale get in llm (Prometheus mode: no pods)", got)
	}
}

// TestPairDeletionCostRBAC: serve sets no pod-deletion-cost on a
// prefill/decode pair's pods (pod_deletion_cost is refused on a pair), so
// the deletion-cost mode grants patch on pods only in a namespace with a
// one-pool target: a pair alone in llm gets list,watch there; a one-pool
// target in web gets list,watch,patch in web (llm unchanged); one in llm
// beside the pair gets patch in llm. Embedded mode, each pool scraping its
// pods; in Prometheus mode no pod is read or patched, and none is granted.
func TestPairDeletionCostRBAC(t *testing.T) {
	one := func(ns string) string {
		return "- {name: web, workload: {namespace: " + ns + ", name: web}, config: {scrape: {port: 8000}, metrics: [{type: queue, target: 24}], maxReplicaCount: 4}}\n"
	}
	pd := strings.Replace(pairValues("", "[deletion-cost]"), "\nrbac:", "\nprometheus: {url: null}\nkeda: {serverAddress: http://prom.example:9090}\nrbac:", 1)
	pd = strings.Replace(pd, "        maxReplicaCount: 8\n", "        maxReplicaCount: 8\n        scrape: {port: 8000}\n", 1)
	pd = strings.Replace(pd, "        maxReplicaCount: 16\n", "        maxReplicaCount: 16\n        scrape: {port: 8000}\n", 1)
	if got := rules(render(t, pairValues("", "[deletion-cost]")+one("web"))); len(got) != 2 || got[0].resource != "deployments/scale" || got[1].resource != "deployments/scale" {
		t.Errorf("Prometheus mode: rules %v, want only the scale get in llm and web", got)
	}
	for _, c := range []struct {
		name, values string
		want         []rule
	}{
		{"pair alone", pd, []rule{
			{"llm", "", "pods", "list,watch"},
			{"llm", "apps", "deployments/scale", "get"},
		}},
		{"one-pool target in web", pd + one("web"), []rule{
			{"llm", "", "pods", "list,watch"},
			{"llm", "apps", "deployments/scale", "get"},
			{"web", "", "pods", "list,watch,patch"},
			{"web", "apps", "deployments/scale", "get"},
		}},
		{"one-pool target in llm", pd + one("llm"), []rule{
			{"llm", "", "pods", "list,watch,patch"},
			{"llm", "apps", "deployments/scale", "get"},
		}},
	} {
		if got := rules(render(t, c.values)); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: rules\n got %v\nwant %v", c.name, got, c.want)
		}
	}
}

// TestPairBadValues: a pair value the chart cannot render is refused
// naming it and what to give instead.
func TestPairBadValues(t *testing.T) {
	pd := pairValues("", "[]")
	for _, c := range []struct{ values, want string }{
		{strings.Replace(pd, "    decode: {apiVersion: apps/v1, kind: Deployment, name: chat-decode}\n", "", 1),
			"targets[chat].workload.decode.name is required for a prefill/decode pair: the decode pool's workload (e.g. {apiVersion: apps/v1, kind: Deployment, name: chat-decode}); its ScaledObject scales it (or scaledObject.enabled: false)"},
		{strings.Replace(pairValues("{enabled: false}", "[read-only]"), "    prefill: {apiVersion: apps/v1, kind: Deployment, name: chat-prefill}\n", "", 1),
			"targets[chat].workload.prefill.name is required for a prefill/decode pair: the prefill pool's workload (e.g. {apiVersion: apps/v1, kind: Deployment, name: chat-prefill}); with rbac.modes serve reads it as the role's scaleTargetRef"},
		{strings.Replace(pd, "    namespace: llm\n", "", 1), "targets[chat].workload.namespace is required for a prefill/decode pair"},
		{strings.Replace(pd, "        maxReplicaCount: 16\n", "", 1), "targets[chat].config.roles.decode.maxReplicaCount is required for its ScaledObject"},
		{strings.Replace(pd, "        minReplicaCount: 2\n", "        minReplicaCount: 0\n", 1),
			"targets[chat].config.roles.decode.minReplicaCount: 0: a prefill/decode pair's pools do not scale to zero"},
		{strings.Replace(pd, "        minReplicaCount: 2\n", "        minReplicaCount: 17\n", 1),
			"targets[chat].config.roles.decode.minReplicaCount: 17 is above its maxReplicaCount 16"},
		{pd[:strings.Index(pd, "      decode:\n        selector")], "targets[chat].config.roles.decode is required: a prefill/decode pair names both pools"},
		{strings.Replace(pd, "    lookahead: 136s\n", "    lookahead: 136s\n    maxReplicaCount: 16\n", 1),
			"targets[chat].config.maxReplicaCount: a prefill/decode pair (config.roles) is bounded per pool: give roles.prefill.minReplicaCount/maxReplicaCount and roles.decode's"},
		{strings.Replace(pd, "    namespace: llm\n", "    namespace: llm\n    name: chat\n", 1),
			"targets[chat].workload.name: a prefill/decode pair (config.roles) has one workload per role: name them as workload.prefill and workload.decode"},
		{strings.Replace(pd, "name: chat-decode}", "name: chat-prefill}", 1),
			`targets[chat].workload: prefill and decode name the same workload Deployment "chat-prefill"`},
		{strings.Replace(pairValues("", "[apply]"), "  config:\n", "  apply: true\n  config:\n", 1), "targets[chat].apply: its ScaledObject's HPA would be a second writer"},
		// A one-pool target with a pair's keys.
		{"targets:\n- {name: chat, workload: {namespace: llm, name: chat, prefill: {name: chat-prefill}}, config: {selector: '{pod=\"x\"}', metrics: [{type: queue, target: 24}], maxReplicaCount: 4}}",
			"targets[chat].workload.prefill: is a prefill/decode pair's (config.roles: {prefill, decode})"},
		{"targets:\n- {name: chat, workload: {namespace: llm, name: chat}, scaledObject: {decode: {pollingInterval: 5}}, config: {selector: '{pod=\"x\"}', metrics: [{type: queue, target: 24}], maxReplicaCount: 4}}",
			"targets[chat].scaledObject.decode: is a prefill/decode pair's"},
		// A pair's ScaledObjects are <name>-<role>: the target's name must make
		// a Kubernetes object name that KEDA takes (at most 54 characters: its
		// HPA is keda-hpa-<name>, a 63-character label value). 47 + len("-prefill") = 55.
		{strings.Replace(pd, "- name: chat\n", "- name: Chat_PD\n", 1),
			`targets[Chat_PD]'s prefill ScaledObject: its name "Chat_PD-prefill" is not a Kubernetes object name`},
		{strings.Replace(pd, "- name: chat\n", "- name: "+strings.Repeat("a", 47)+"\n", 1),
			`its name "` + strings.Repeat("a", 47) + `-prefill" has 55 characters; KEDA refuses a ScaledObject name over 54`},
		// Per-role overrides while the ScaledObjects are off: nothing uses them.
		{pairValues("{enabled: false, prefill: {pollingInterval: 5}}", "[]"),
			"targets[chat].scaledObject.prefill: overrides the prefill ScaledObject's keys, but scaledObject.enabled is false: no ScaledObject is rendered, so it would be unused; drop scaledObject.prefill, or set scaledObject.enabled: true"},
		{pairValues("{enabled: false, decode: {fallback: {failureThreshold: 2}}}", "[read-only]"),
			"targets[chat].scaledObject.decode: overrides the decode ScaledObject's keys, but scaledObject.enabled is false"},
		// values.schema.json: a role's keys are as strict as the target's.
		{pairValues("{decode: {enabled: false}}", "[]"), "at '/targets/0/scaledObject/decode': additional properties 'enabled' not allowed"},
		{strings.Replace(pd, "name: chat-decode}", "name: chat-decode, namespace: llm}", 1), "at '/targets/0/workload/decode': additional properties 'namespace' not allowed"},
	} {
		_, err := tryRender(c.values)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v\nwant one containing %q", err, c.want)
		}
	}
	// 46 + len("-prefill") = 54: KEDA's longest.
	if n := len(scaledObjects(render(t, strings.Replace(pd, "- name: chat\n", "- name: "+strings.Repeat("a", 46)+"\n", 1)))); n != 2 {
		t.Errorf("a 46-character pair name: %d ScaledObjects, want 2", n)
	}
}

// TestScaledObjectCollisions: two ScaledObjects of one name in one
// namespace, or two on one workload, are refused naming both targets. A
// pair's ScaledObjects are <target>-prefill and <target>-decode and a
// one-pool target's is its workload's name, so a pair chat beside a target
// on a workload chat-prefill rendered two chat-prefill in llm (Helm, or
// kubectl apply, kept one of the two), and a target on a workload a pair's
// role already scales rendered a second ScaledObject on it (KEDA's webhook
// refuses it; without the webhook two HPAs write spec.replicas).
func TestScaledObjectCollisions(t *testing.T) {
	one := func(name, ns, workload string) string {
		return "- {name: " + name + ", workload: {namespace: " + ns + ", name: " + workload +
			"}, config: {selector: '{pod=\"x\"}', metrics: [{type: queue, target: 24}], maxReplicaCount: 4}}\n"
	}
	pd := pairValues("", "[]")
	for _, c := range []struct{ values, want string }{
		// A one-pool target x on a workload chat-prefill (not the pair's: its
		// prefill pool's is chat-prefill too, so rename the pair's workload).
		{strings.Replace(pd, "name: chat-prefill}", "name: p1}", 1) + one("x", "llm", "chat-prefill"),
			"targets[x]'s ScaledObject, llm/chat-prefill, has the name of targets[chat]'s prefill ScaledObject"},
		// A one-pool target x on the pair's decode workload.
		{pd + one("x", "llm", "chat-decode"),
			"targets[x]'s ScaledObject would scale Deployment llm/chat-decode, which targets[chat]'s decode ScaledObject scales already"},
		// Two one-pool targets on one workload.
		{"targets:\n" + one("x", "llm", "w") + one("z", "llm", "w"),
			"targets[z]'s ScaledObject would scale Deployment llm/w, which targets[x]'s ScaledObject scales already"},
	} {
		_, err := tryRender(c.values)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v\nwant one containing %q", err, c.want)
		}
	}
	// Distinct: the same workload name in another namespace, a pair beside
	// a target on a workload named as the pair target (chat, not chat-prefill),
	// and a target without a ScaledObject on a scaled workload.
	for _, c := range []struct {
		values string
		want   []string // namespace/name of each ScaledObject
	}{
		{"targets:\n" + one("x", "llm", "w") + one("z", "other", "w"), []string{"llm/w", "other/w"}},
		{pd + one("x", "llm", "chat"), []string{"llm/chat-prefill", "llm/chat-decode", "llm/chat"}},
		{pd + "- {name: x, scaledObject: {enabled: false}, workload: {namespace: llm, name: chat-decode}, config: {selector: '{pod=\"x\"}', metrics: [{type: queue, target: 24}], maxReplicaCount: 4}}\n",
			[]string{"llm/chat-prefill", "llm/chat-decode"}},
	} {
		var got []string
		for _, so := range every[*kedav1alpha1.ScaledObject](render(t, c.values)) {
			got = append(got, so.Namespace+"/"+so.Name)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("values %q: ScaledObjects %v, want %v", c.values, got, c.want)
		}
	}
}

// TestKubeConfigConflicts: with rbac.modes the chart writes the workload
// into serve's config (the target's namespace, its or each role's
// scaleTargetRef); a config that names another was silently replaced
// (serve then read and wrote workload.decode, not the user's decode
// scaleTargetRef). Now refused naming both; an equal one renders.
func TestKubeConfigConflicts(t *testing.T) {
	pd := pairValues("", "[read-only]")
	one := "rbac: {modes: [read-only]}\ntargets:\n- {name: chat, workload: {namespace: llm, name: chat}, config: {selector: '{pod=\"x\"}', metrics: [{type: queue, target: 24}], maxReplicaCount: 4, "
	for _, c := range []struct{ values, want string }{
		{strings.Replace(pd, "        metrics: [{type: demand, target: 0.9}]\n        minReplicaCount: 2\n", "        metrics: [{type: demand, target: 0.9}]\n        minReplicaCount: 2\n        scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: zzz}\n", 1),
			`targets[chat].config.roles.decode.scaleTargetRef: {"apiVersion":"apps/v1","kind":"Deployment","name":"zzz"}, but workload.decode is {"apiVersion":"apps/v1","kind":"Deployment","name":"chat-decode"}`},
		{strings.Replace(pd, "    server: vllm\n", "    server: vllm\n    namespace: other\n", 1),
			`targets[chat].config.namespace: "other", but workload.namespace is "llm"`},
		{one + "namespace: other}}", `targets[chat].config.namespace: "other", but workload.namespace is "llm"`},
		{one + "scaleTargetRef: {apiVersion: apps/v1, kind: StatefulSet, name: chat}}}",
			`targets[chat].config.scaleTargetRef: {"apiVersion":"apps/v1","kind":"StatefulSet","name":"chat"}, but workload is {"apiVersion":"apps/v1","kind":"Deployment","name":"chat"}`},
	} {
		_, err := tryRender(c.values)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v\nwant one containing %q", err, c.want)
		}
	}
	// Equal values render; without rbac.modes the config is the user's.
	f := serveConfig(t, render(t, one+"namespace: llm, scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat}}}"))
	if r := f.Targets[0].ScaleTargetRef; r == nil || r.Name != "chat" || f.Targets[0].Namespace != "llm" {
		t.Errorf("equal values: ref %+v namespace %q", r, f.Targets[0].Namespace)
	}
	render(t, strings.Replace(pairValues("", "[]"), "    server: vllm\n", "    server: vllm\n    namespace: other\n", 1))
}
