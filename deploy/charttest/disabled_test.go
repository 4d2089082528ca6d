package charttest

import (
	"slices"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestDisabledComponentsRender: a component turned off renders nothing and
// its other keys are not held against it. Before, tune: {enabled: false,
// shards: 0} failed the render on /tune/shards (the schema's minimum held
// for a CronJob that is not rendered), and podDisruptionBudget: {enabled:
// false} (the common charts' switch) failed on "additional properties
// 'enabled' not allowed". Types are still checked: a typo is refused.
func TestDisabledComponentsRender(t *testing.T) {
	for _, c := range []struct{ values, off string }{
		{"tune: {enabled: false, shards: 0, workers: -1}", "CronJob"},
		{"podDisruptionBudget: {enabled: false}", "PodDisruptionBudget"},
		// minAvailable 1 of 1 replica would block drains: not checked, none rendered.
		{"podDisruptionBudget: {enabled: false, minAvailable: 1}", "PodDisruptionBudget"},
		// the ScaledObjects' installation labels are then the values' (TestSeriesLabels)
		{"serviceMonitor: {enabled: false, interval: ''}\nkeda: {seriesLabels: {namespace: infscale}}", "ServiceMonitor"},
		// podMonitor.selector is required only for a PodMonitor rendered.
		{"targets:\n- {name: chat, podMonitor: {enabled: false}, workload: {namespace: llm, name: chat}, config: {maxReplicaCount: 4}}", "PodMonitor"},
	} {
		objs, err := tryRender(c.values)
		if err != nil {
			t.Errorf("%s: %v", c.values, err)
			continue
		}
		if k := kinds(objs); slices.Contains(k, c.off) {
			t.Errorf("%s: kinds %v, want no %s", c.values, k, c.off)
		}
	}
	if _, err := tryRender("tune: {enabled: false, shards: '4'}"); err == nil || !strings.Contains(err.Error(), "at '/tune/shards': got string, want integer") {
		t.Errorf("a disabled CronJob's mistyped key: %v, want the schema's refusal", err)
	}
	// Enabled, the range is checked as before (TestTuneShardsAtLeastOne).
	if _, err := tryRender("tune: {enabled: true, shards: 0, results: {claimName: r}}\n" + tunedTarget); err == nil || !strings.Contains(err.Error(), "at '/tune/shards'") {
		t.Errorf("enabled, shards 0: %v, want the schema's refusal", err)
	}
}

// TestPodDisruptionBudgetEnabled: enabled: true with minAvailable renders
// the budget without the switch in its spec (decoded strictly: an
// "enabled" field in a PodDisruptionBudgetSpec fails the decode); enabled:
// true alone is refused naming what to add.
func TestPodDisruptionBudgetEnabled(t *testing.T) {
	pdb := only[*policyv1.PodDisruptionBudget](t, render(t, "replicas: 2\nrbac: {modes: [apply, leases]}\npodDisruptionBudget: {enabled: true, minAvailable: 1}"))
	if pdb.Spec.MinAvailable == nil || *pdb.Spec.MinAvailable != intstr.FromInt32(1) || pdb.Spec.MaxUnavailable != nil {
		t.Errorf("spec %+v, want minAvailable 1", pdb.Spec)
	}
	// The checks still hold when enabled.
	if _, err := tryRender("podDisruptionBudget: {enabled: true, minAvailable: 1}"); err == nil || !strings.Contains(err.Error(), "minAvailable: 1 with replicas: 1 would block") {
		t.Errorf("enabled, minAvailable 1 of 1: %v", err)
	}
	if _, err := tryRender("podDisruptionBudget: {enabled: true}"); err == nil || !strings.Contains(err.Error(), "podDisruptionBudget.enabled: true needs minAvailable or maxUnavailable") {
		t.Errorf("enabled alone: %v, want the refusal naming minAvailable or maxUnavailable", err)
	}
}

// TestTuneDirMounted: serve reads a target's config.tune.dir in its own
// pod; one that is not there was rendered, and serve logged `tuning failed`
// each minute and never tuned. The directory must be the results claim's
// (tune.results.path, mounted with tune.enabled) or under an
// extraVolumeMounts mountPath; with tune.enabled the CronJob tunes every
// tune: target into tune.results.path, so each must read it there, and at
// least one must exist (tune --shard exits 2 without one: every run failed).
func TestTuneDirMounted(t *testing.T) {
	const target = "targets:\n- {name: chat, workload: {namespace: llm, name: chat}, config: {maxReplicaCount: 4, tune: TUNE}}\n"
	with := func(tune string) string { return strings.Replace(target, "TUNE", tune, 1) }
	for _, c := range []struct{ values, want string }{
		// The CronJob off: nothing mounts /var/lib/infscale/tune.
		{with("{dir: /var/lib/infscale/tune}"), "targets[chat].config.tune.dir: /var/lib/infscale/tune is not mounted in serve's pod: tune.enabled is false"},
		// A mount elsewhere does not cover it (/results-old is not under /results).
		{"extraVolumes: [{name: r, emptyDir: {}}]\nextraVolumeMounts: [{name: r, mountPath: /results}]\n" + with("{dir: /results-old}"), "targets[chat].config.tune.dir: /results-old is not mounted"},
		// The CronJob on: its results are at tune.results.path only.
		{"tune: {enabled: true, results: {claimName: r}}\n" + with("{dir: /elsewhere}"), "targets[chat].config.tune.dir: /elsewhere, but the tune CronJob (tune.enabled) writes every tuned target's result to tune.results.path /var/lib/infscale/tune"},
		{"tune: {enabled: true, results: {claimName: r}}\n" + with("{mode: adopt}"), "targets[chat].config.tune: has no dir, so serve tunes it in process while the tune CronJob (tune.enabled) also tunes it"},
		// The CronJob on and no target to tune (the default targets).
		{"tune: {enabled: true, results: {claimName: r}}", "tune.enabled: no target's config has a tune: block, so every run of the CronJob would fail"},
	} {
		if _, err := tryRender(c.values); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.values, err, c.want)
		}
	}
	for _, v := range []string{
		// Results brought by the user: at or under a mountPath.
		"extraVolumes: [{name: r, emptyDir: {}}]\nextraVolumeMounts: [{name: r, mountPath: /results/}]\n" + with("{dir: /results}"),
		"extraVolumes: [{name: r, emptyDir: {}}]\nextraVolumeMounts: [{name: r, mountPath: /results}]\n" + with("{dir: /results/tune/}"),
		// No dir, no CronJob: serve tunes in process.
		with("{mode: shadow}"),
	} {
		objs, err := tryRender(v)
		if err != nil {
			t.Errorf("%s: %v", v, err)
			continue
		}
		if n := len(every[*batchv1.CronJob](objs)); n != 0 {
			t.Errorf("%s: %d CronJobs, want none", v, n)
		}
	}
	if _, err := tryRender("tune: {enabled: true, results: {claimName: r, path: /var/lib/infscale/tune/}}\n" + with("{dir: /var/lib/infscale/tune}")); err != nil {
		t.Errorf("dir at tune.results.path (trailing / aside): %v", err)
	}
}
