package charttest

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
)

// badQuantile is a target whose config serve refuses (a quantile must be in
// (0, 1)) and the schema lets through: targets[].config is serve's.
const badQuantile = "targets:\n- {name: chat, workload: {namespace: llm, apiVersion: apps/v1, kind: Deployment, name: chat}, config: {server: vllm, selector: '{namespace=\"llm\"}', metrics: [{type: queue, target: 24}, {type: ttft, quantile: 1.5, window: 3m, target: 2500ms}], maxReplicaCount: 8}}\n"

// TestConfigCheckHook: by default the chart renders a pre-install and
// pre-upgrade hook, a copy of the release's config (weight -10, before the
// Job) and a Job running `serve --check-config` on it with serve's image,
// no retry and serve's error as its termination message; both are deleted
// when the check passes and kept when it fails. configCheck.enabled: false
// renders none. serve's own container reports its exit's last log lines
// the same way (kubectl describe pod on a crash loop).
func TestConfigCheckHook(t *testing.T) {
	objs, hooks, err := renderSplit("infscale", "")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kinds(hooks), []string{"ConfigMap", "Job"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("hooks %v, want %v", got, want)
	}
	cm, job := only[*corev1.ConfigMap](t, hooks), only[*batchv1.Job](t, hooks)
	for _, h := range []struct {
		name   string
		ann    map[string]string
		weight string
	}{{cm.Name, cm.Annotations, "-10"}, {job.Name, job.Annotations, "0"}} {
		want := map[string]string{"helm.sh/hook": "pre-install,pre-upgrade", "helm.sh/hook-weight": h.weight, "helm.sh/hook-delete-policy": "before-hook-creation,hook-succeeded"}
		if h.name != "infscale-check-config" || !reflect.DeepEqual(h.ann, want) {
			t.Errorf("hook %s annotations %v, want infscale-check-config with %v", h.name, h.ann, want)
		}
	}
	if got, want := cm.Data, only[*corev1.ConfigMap](t, objs).Data; !reflect.DeepEqual(got, want) {
		t.Errorf("the check's config differs from the release's:\n%v\n%v", got, want)
	}
	d := only[*appsv1.Deployment](t, objs).Spec.Template.Spec.Containers[0]
	js := job.Spec.Template.Spec
	c := js.Containers[0]
	if want := []string{"serve", "--check-config", "--config=/etc/infscale/infscale.yaml"}; !reflect.DeepEqual(c.Args, want) || c.Image != d.Image {
		t.Errorf("check container %s %v, want serve's image %s and %v", c.Image, c.Args, d.Image, want)
	}
	if job.Spec.BackoffLimit == nil || *job.Spec.BackoffLimit != 0 || js.RestartPolicy != corev1.RestartPolicyNever ||
		js.AutomountServiceAccountToken == nil || *js.AutomountServiceAccountToken {
		t.Errorf("job spec backoffLimit %v, restartPolicy %s, automount %v; want 0, Never, false", job.Spec.BackoffLimit, js.RestartPolicy, js.AutomountServiceAccountToken)
	}
	if len(js.Volumes) != 1 || js.Volumes[0].ConfigMap == nil || js.Volumes[0].ConfigMap.Name != cm.Name ||
		len(c.VolumeMounts) != 1 || c.VolumeMounts[0].MountPath != "/etc/infscale" {
		t.Errorf("check volumes %+v mounts %+v, want %s at /etc/infscale", js.Volumes, c.VolumeMounts, cm.Name)
	}
	for _, ct := range []corev1.Container{c, d} {
		if ct.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError {
			t.Errorf("container %s terminationMessagePolicy %q, want FallbackToLogsOnError", ct.Name, ct.TerminationMessagePolicy)
		}
	}
	if _, hooks, err := renderSplit("infscale", "configCheck: {enabled: false}"); err != nil || len(hooks) != 0 {
		t.Errorf("configCheck.enabled false: hooks %v, %v; want none", kinds(hooks), err)
	}
}

// TestConfigCheckRefuses runs the hook Job's command, the real binary, on
// the hook's config: the default values pass (exit 0), and a quantile of
// 1.5 in targets[0].config.metrics[1], which renders (the schema leaves
// serve's config to serve), exits 2 naming targets[0].metrics[1].quantile
// and the range it wants: the install or upgrade fails there, before the
// Deployment rolls.
func TestConfigCheckRefuses(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go toolchain to build infscale")
	}
	dir := t.TempDir()
	bin := filepath.Join(dir, "infscale")
	if out, err := exec.Command("go", "build", "-C", filepath.Join("..", ".."), "-o", bin, "./cmd/recommender").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, c := range []struct {
		values string
		code   int
		want   string
	}{
		{"", 0, "valid: 1 target(s)"},
		{badQuantile, 2, "targets[0].metrics[1].quantile: must be in (0, 1), e.g. 0.95, got 1.5 (target \"chat\")"},
	} {
		hooks := renderHooks(t, c.values)
		cfg := filepath.Join(dir, "infscale.yaml")
		if err := os.WriteFile(cfg, []byte(only[*corev1.ConfigMap](t, hooks).Data["infscale.yaml"]), 0o644); err != nil {
			t.Fatal(err)
		}
		args := only[*batchv1.Job](t, hooks).Spec.Template.Spec.Containers[0].Args
		args = append(args[:len(args)-1:len(args)-1], "--config="+cfg)
		var out bytes.Buffer
		cmd := exec.Command(bin, args...)
		cmd.Stdout, cmd.Stderr = &out, &out
		err := cmd.Run()
		code := 0
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		if code != c.code || !strings.Contains(out.String(), c.want) {
			t.Errorf("values %q: exit %d, output %q; want %d and %q", c.values, code, out.String(), c.code, c.want)
		}
	}
}

// TestConfigCheckMountsExtraVolumes: serve --check-config reads a target's
// replica.calibration file and refuses a missing one (exit 2, "no such
// file"), so the hook Job mounts serve's extraVolumes and extraVolumeMounts
// as serve's pod does: a calibration file mounted for serve from a
// ConfigMap is there for the check too, instead of failing the install of a
// config serve accepts.
func TestConfigCheckMountsExtraVolumes(t *testing.T) {
	values := "extraVolumes: [{name: calibration, configMap: {name: chat-calibration}}]\n" +
		"extraVolumeMounts: [{name: calibration, mountPath: /etc/infscale-calibration, readOnly: true}]\n"
	objs, hooks, err := renderSplit("infscale", values)
	if err != nil {
		t.Fatal(err)
	}
	js := only[*batchv1.Job](t, hooks).Spec.Template.Spec
	d := only[*appsv1.Deployment](t, objs).Spec.Template.Spec
	want := corev1.VolumeMount{Name: "calibration", MountPath: "/etc/infscale-calibration", ReadOnly: true}
	for _, spec := range []struct {
		name string
		ps   corev1.PodSpec
	}{{"check Job", js}, {"serve", d}} {
		if !slices.ContainsFunc(spec.ps.Containers[0].VolumeMounts, func(m corev1.VolumeMount) bool { return reflect.DeepEqual(m, want) }) {
			t.Errorf("%s mounts %+v, want %+v", spec.name, spec.ps.Containers[0].VolumeMounts, want)
		}
		if !slices.ContainsFunc(spec.ps.Volumes, func(v corev1.Volume) bool {
			return v.Name == "calibration" && v.ConfigMap != nil && v.ConfigMap.Name == "chat-calibration"
		}) {
			t.Errorf("%s volumes %+v, want calibration from ConfigMap chat-calibration", spec.name, spec.ps.Volumes)
		}
	}
}

// TestConfigCheckNoServiceAccount: the check's Job runs as the namespace's
// default ServiceAccount even when serve's pods have one of their own
// (workload identity: an IRSA role for Amazon Managed Prometheus). That
// ServiceAccount is a release object, which Helm creates after the
// pre-install hooks: a Job naming it would get no pod at install until its
// deadline. The check only reads the file (no query, no credentials), so
// it needs none; docs/chart.md said it used serve's.
func TestConfigCheckNoServiceAccount(t *testing.T) {
	const values = "serviceAccount: {annotations: {eks.amazonaws.com/role-arn: 'arn:aws:iam::123456789012:role/infscale-amp-query'}}\n"
	objs, hooks, err := renderSplit("infscale", values)
	if err != nil {
		t.Fatal(err)
	}
	if sa := only[*appsv1.Deployment](t, objs).Spec.Template.Spec.ServiceAccountName; sa != "infscale" {
		t.Errorf("serve's serviceAccountName %q, want infscale", sa)
	}
	if sa := only[*batchv1.Job](t, hooks).Spec.Template.Spec.ServiceAccountName; sa != "" {
		t.Errorf("the check Job's serviceAccountName %q, want none (the release's ServiceAccount does not exist before pre-install hooks)", sa)
	}
}
