package charttest

import (
	"reflect"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestTopologySpreadConstraints: topologySpreadConstraints reach serve's
// pod spec as given; one without labelSelector gets serve's selector labels
// (release prod: app.kubernetes.io/name infscale, instance prod), since a
// constraint with none counts no pod and spreads nothing; one with its own
// keeps it. Kubernetes requires maxSkew (at least 1), topologyKey and
// whenUnsatisfiable: the schema refuses a constraint without them.
func TestTopologySpreadConstraints(t *testing.T) {
	if c := podSpec(t, render(t, "")).TopologySpreadConstraints; len(c) != 0 {
		t.Errorf("defaults: topologySpreadConstraints %+v, want none", c)
	}
	objs, err := tryRenderRelease("prod", `
replicas: 2
topologySpreadConstraints:
- {maxSkew: 1, topologyKey: topology.kubernetes.io/zone, whenUnsatisfiable: ScheduleAnyway}
- {maxSkew: 2, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: DoNotSchedule, labelSelector: {matchLabels: {team: a}}, matchLabelKeys: [pod-template-hash]}
`)
	if err != nil {
		t.Fatal(err)
	}
	c := podSpec(t, objs).TopologySpreadConstraints
	if len(c) != 2 {
		t.Fatalf("topologySpreadConstraints %+v, want 2", c)
	}
	if c[0].MaxSkew != 1 || c[0].TopologyKey != "topology.kubernetes.io/zone" || c[0].WhenUnsatisfiable != corev1.ScheduleAnyway {
		t.Errorf("first constraint %+v, want maxSkew 1 over topology.kubernetes.io/zone, ScheduleAnyway", c[0])
	}
	if want := map[string]string{"app.kubernetes.io/name": "infscale", "app.kubernetes.io/instance": "prod"}; c[0].LabelSelector == nil || !reflect.DeepEqual(c[0].LabelSelector.MatchLabels, want) {
		t.Errorf("first constraint's labelSelector %+v, want matchLabels %v (serve's pods)", c[0].LabelSelector, want)
	}
	if c[1].MaxSkew != 2 || c[1].WhenUnsatisfiable != corev1.DoNotSchedule || c[1].LabelSelector == nil ||
		!reflect.DeepEqual(c[1].LabelSelector.MatchLabels, map[string]string{"team": "a"}) || !reflect.DeepEqual(c[1].MatchLabelKeys, []string{"pod-template-hash"}) {
		t.Errorf("second constraint %+v, want it as given (maxSkew 2, DoNotSchedule, team: a, matchLabelKeys [pod-template-hash])", c[1])
	}
	// An explicit labelSelector, even {} (every pod of the namespace), is the user's.
	c = podSpec(t, render(t, "topologySpreadConstraints: [{maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway, labelSelector: {}}]\n")).TopologySpreadConstraints
	if len(c) != 1 || c[0].LabelSelector == nil || len(c[0].LabelSelector.MatchLabels) != 0 {
		t.Errorf("labelSelector {} given: rendered %+v, want it kept empty", c)
	}
	for _, v := range []string{
		"topologySpreadConstraints: [{maxSkew: 1, whenUnsatisfiable: ScheduleAnyway}]\n",
		"topologySpreadConstraints: [{maxSkew: 0, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: ScheduleAnyway}]\n",
		"topologySpreadConstraints: [{maxSkew: 1, topologyKey: kubernetes.io/hostname, whenUnsatisfiable: Sometimes}]\n",
	} {
		if _, err := tryRender(v); err == nil || !strings.Contains(err.Error(), "topologySpreadConstraints") {
			t.Errorf("%q: %v, want the schema to refuse it naming topologySpreadConstraints", v, err)
		}
	}
}
