package charttest

import (
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/robfig/cron/v3"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
)

// tunedTarget is a target that reads the CronJob's results
// (config.tune.dir at tune.results.path's default): the CronJob needs one.
const tunedTarget = "targets:\n- {name: chat, workload: {namespace: llm, apiVersion: apps/v1, kind: Deployment, name: chat}, config: {server: vllm, selector: '{namespace=\"llm\"}', metrics: [{type: queue, target: 24}], maxReplicaCount: 8, tune: {dir: /var/lib/infscale/tune, mode: shadow}}}\n"

// TestTuneCronJob: off by default; enabled, an indexed CronJob of 3
// shards runs `tune --shard $(JOB_COMPLETION_INDEX)/3` on the release's
// config and writes to the results claim, which serve mounts at the same
// path; enabled without a claim is refused.
func TestTuneCronJob(t *testing.T) {
	if n := len(every[*batchv1.CronJob](render(t, ""))); n != 0 {
		t.Fatalf("%d CronJobs by default, want none", n)
	}
	objs := render(t, "tune: {enabled: true, shards: 3, results: {claimName: tune-results}}\n"+tunedTarget)
	cj := only[*batchv1.CronJob](t, objs)
	js := cj.Spec.JobTemplate.Spec
	c := js.Template.Spec.Containers[0]
	want := []string{"tune", "--config=/etc/infscale/infscale.yaml", "--shard=$(JOB_COMPLETION_INDEX)/3", "--out=/var/lib/infscale/tune", "--workers=1"}
	if js.CompletionMode == nil || *js.CompletionMode != batchv1.IndexedCompletion || *js.Completions != 3 || *js.Parallelism != 3 || !slices.Equal(c.Args, want) {
		t.Errorf("job %+v args %v, want indexed 3/3 and %v", js, c.Args, want)
	}
	if v := js.Template.Spec.Volumes[1]; v.PersistentVolumeClaim == nil || v.PersistentVolumeClaim.ClaimName != "tune-results" {
		t.Errorf("results volume %+v", v)
	}
	d := only[*appsv1.Deployment](t, objs)
	mounted := false
	for _, m := range d.Spec.Template.Spec.Containers[0].VolumeMounts {
		mounted = mounted || (m.Name == "tune-results" && m.MountPath == "/var/lib/infscale/tune" && m.ReadOnly)
	}
	if !mounted {
		t.Errorf("serve does not mount the results: %+v", d.Spec.Template.Spec.Containers[0].VolumeMounts)
	}
	if _, err := tryRender("tune: {enabled: true}\n" + tunedTarget); err == nil || !strings.Contains(err.Error(), "claimName") {
		t.Errorf("enabled without a claim: %v", err)
	}
}

// TestTuneShardsAtLeastOne: tune.shards is the indexed Job's completions.
// 0 rendered `completions: 0` and `--shard=$(JOB_COMPLETION_INDEX)/0`: a
// Job of no pods, complete at once, so the CronJob tuned nothing every
// night without an error anywhere. The schema now refuses it, naming the
// value; 1 (one shard, all targets) still renders one completion.
func TestTuneShardsAtLeastOne(t *testing.T) {
	for _, v := range []string{"0", "-2"} {
		_, err := tryRender("tune: {enabled: true, shards: " + v + ", results: {claimName: tune-results}}\n" + tunedTarget)
		if err == nil || !strings.Contains(err.Error(), "at '/tune/shards'") {
			t.Errorf("tune.shards %s: error %v, want one naming /tune/shards", v, err)
		}
	}
	js := only[*batchv1.CronJob](t, render(t, "tune: {enabled: true, shards: 1, results: {claimName: tune-results}}\n"+tunedTarget)).Spec.JobTemplate.Spec
	if *js.Completions != 1 || *js.Parallelism != 1 || js.Template.Spec.Containers[0].Args[2] != "--shard=$(JOB_COMPLETION_INDEX)/1" {
		t.Errorf("tune.shards 1: completions %d, parallelism %d, args %v; want 1, 1, --shard=$(JOB_COMPLETION_INDEX)/1", *js.Completions, *js.Parallelism, js.Template.Spec.Containers[0].Args)
	}
}

// TestTuneWorkersNotNegative: tune.workers is tune's --workers, which
// takes 0 to 1024 ("--workers 1025: want 0 to 1024 replays at once") and
// refuses others only when the Job runs: the install succeeded and every
// nightly run failed. The schema refuses them at render; 0 (the number of
// cores) renders --workers=0.
func TestTuneWorkersNotNegative(t *testing.T) {
	for _, w := range []string{"-1", "1025"} {
		if _, err := tryRender("tune: {enabled: true, workers: " + w + ", results: {claimName: tune-results}}\n" + tunedTarget); err == nil || !strings.Contains(err.Error(), "at '/tune/workers'") {
			t.Errorf("tune.workers %s: error %v, want one naming /tune/workers", w, err)
		}
	}
	if args := only[*batchv1.CronJob](t, render(t, "tune: {enabled: true, workers: 1024, results: {claimName: tune-results}}\n"+tunedTarget)).Spec.JobTemplate.Spec.Template.Spec.Containers[0].Args; !slices.Contains(args, "--workers=1024") {
		t.Errorf("tune.workers 1024: args %v, want --workers=1024", args)
	}
	args := only[*batchv1.CronJob](t, render(t, "tune: {enabled: true, workers: 0, results: {claimName: tune-results}}\n"+tunedTarget)).Spec.JobTemplate.Spec.Template.Spec.Containers[0].Args
	if !slices.Contains(args, "--workers=0") {
		t.Errorf("tune.workers 0: args %v, want --workers=0", args)
	}
}

// TestTuneAdoptInProcessWithLeases: with rbac.modes leases serve runs
// --leader-elect, which refuses a target that adopts what it tunes in
// process (several replicas would each adopt their own candidate): the
// render refuses it too, naming the target; the same target in shadow
// mode renders, and so does adopt with the CronJob's dir.
func TestTuneAdoptInProcessWithLeases(t *testing.T) {
	target := func(tune string) string {
		return "targets:\n- {name: chat, workload: {namespace: llm, apiVersion: apps/v1, kind: Deployment, name: chat}, config: {server: vllm, selector: '{namespace=\"llm\"}', metrics: [{type: queue, target: 24}], maxReplicaCount: 8, replica: {gpu: h100-sxm, model: llama-3-8b}, tune: " + tune + "}}\n"
	}
	_, err := tryRender("rbac: {modes: [leases]}\n" + target("{mode: adopt}"))
	if err == nil || !strings.Contains(err.Error(), "targets[chat].config.tune: mode: adopt without dir tunes in serve, and with rbac.modes leases serve runs as several replicas (--leader-elect)") {
		t.Errorf("adopt in process with leases: %v", err)
	}
	render(t, "rbac: {modes: [leases]}\n"+target("{mode: shadow}"))
	render(t, "rbac: {modes: [leases]}\ntune: {enabled: true, results: {claimName: tune-results}}\n"+target("{mode: adopt, dir: /var/lib/infscale/tune}"))
	render(t, target("{mode: adopt}"))
}

// TestTuneMountsExtraVolumes: the CronJob's tune reads serve's config,
// and with it the files that config names: docs/chart.md's Prometheus
// behind auth and TLS reads basic_auth.password_file and tls_config.ca_file
// from a Secret mounted with extraVolumes, and a replica.calibration is a
// file tune's replay loads. Without serve's extraVolumes the tune pods had
// none of them: every shard failed ("unable to read basic auth password
// ... no such file or directory"; a calibration "no such file"). The tune
// pod mounts them where serve does, beside its config and results.
func TestTuneMountsExtraVolumes(t *testing.T) {
	values := "tune: {enabled: true, results: {claimName: tune-results}}\n" + tunedTarget +
		"extraVolumes: [{name: prometheus-auth, secret: {secretName: prometheus-auth}}]\n" +
		"extraVolumeMounts: [{name: prometheus-auth, mountPath: /etc/infscale-auth, readOnly: true}]\n"
	ps := only[*batchv1.CronJob](t, render(t, values)).Spec.JobTemplate.Spec.Template.Spec
	var mounts, vols []string
	for _, m := range ps.Containers[0].VolumeMounts {
		mounts = append(mounts, m.Name+"@"+m.MountPath+"@"+strconv.FormatBool(m.ReadOnly))
	}
	for _, v := range ps.Volumes {
		switch {
		case v.ConfigMap != nil:
			vols = append(vols, v.Name+"=configmap:"+v.ConfigMap.Name)
		case v.PersistentVolumeClaim != nil:
			vols = append(vols, v.Name+"=pvc:"+v.PersistentVolumeClaim.ClaimName)
		case v.Secret != nil:
			vols = append(vols, v.Name+"=secret:"+v.Secret.SecretName)
		}
	}
	wantMounts := []string{"config@/etc/infscale@true", "tune-results@/var/lib/infscale/tune@false", "prometheus-auth@/etc/infscale-auth@true"}
	wantVols := []string{"config=configmap:infscale", "tune-results=pvc:tune-results", "prometheus-auth=secret:prometheus-auth"}
	if !slices.Equal(mounts, wantMounts) || !slices.Equal(vols, wantVols) {
		t.Errorf("tune pod mounts %v volumes %v\nwant mounts %v volumes %v", mounts, vols, wantMounts, wantVols)
	}
}

// TestTuneNeedsPrometheus: the CronJob's `infscale tune --shard` replays
// history from prometheus.url and exits 2 without one ("tune --shard needs
// prometheus.url (history comes from range queries)"). In embedded mode
// (prometheus: {url: null}) the chart rendered the CronJob anyway, and
// serve's check passed (a tune: block with dir needs no Prometheus): every
// nightly run failed, seen only in the Job's log. The render refuses it,
// naming tune.enabled and prometheus.url.
func TestTuneNeedsPrometheus(t *testing.T) {
	values := "prometheus: {url: null}\nrbac: {modes: [apply]}\ntune: {enabled: true, results: {claimName: tune-results}}\n" +
		"targets:\n- {name: chat, workload: {namespace: llm, name: chat}, apply: true, scaledObject: {enabled: false}, config: {server: vllm, scrape: {port: 8000}, metrics: [{type: queue, target: 24}], maxReplicaCount: 8, replica: {gpu: h100-sxm, model: llama-3-8b}, tune: {dir: /var/lib/infscale/tune}}}\n"
	_, err := tryRender(values)
	if err == nil || !strings.Contains(err.Error(), "tune.enabled: the tune CronJob replays each target's history from prometheus.url") || !strings.Contains(err.Error(), "prometheus.url is null") {
		t.Errorf("tune.enabled in embedded mode: error %v, want one naming tune.enabled and prometheus.url", err)
	}
	render(t, strings.Replace(values, "tune: {enabled: true, results: {claimName: tune-results}}", "tune: {enabled: false}\nextraVolumes: [{name: r, persistentVolumeClaim: {claimName: r}}]\nextraVolumeMounts: [{name: r, mountPath: /var/lib/infscale/tune}]", 1))
}

// TestTuneJobValues: the CronJob's Job fields the API server refuses at
// apply are refused at render naming the value, as shards and workers
// are: a negative parallelism, backoffLimit or activeDeadlineSeconds
// (rendered as given: -5 is not empty, so `with` kept it), a schedule
// that is not five cron fields or a macro ("every night", ""), a relative
// results.path (a mountPath must be absolute). The values that work
// render: parallelism 0 (all shards), backoffLimit 0, @daily.
func TestTuneJobValues(t *testing.T) {
	enabled := func(kv string) string {
		return "tune: {enabled: true, results: {claimName: tune-results}, " + kv + "}\n" + tunedTarget
	}
	for _, c := range []struct{ kv, want string }{
		{"parallelism: -1", "at '/tune/parallelism': minimum: got -1, want 0"},
		{"backoffLimit: -1", "at '/tune/backoffLimit': minimum: got -1, want 0"},
		{"backoffLimitPerIndex: -1", "at '/tune/backoffLimitPerIndex': minimum: got -1, want 0"},
		{"activeDeadlineSeconds: -5", "at '/tune/activeDeadlineSeconds': minimum: got -5, want 0"},
		{"schedule: every night", "at '/tune/schedule'"},
		{"schedule: ''", "at '/tune/schedule'"},
		{"schedule: '17 3 * * * *'", "at '/tune/schedule'"},
		{"results: {claimName: tune-results, path: var/lib/tune}", "at '/tune/results/path'"},
	} {
		if _, err := tryRender(enabled(c.kv)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one containing %q", c.kv, err, c.want)
		}
	}
	js := only[*batchv1.CronJob](t, render(t, enabled("parallelism: 0, backoffLimit: 0, schedule: '@daily'")))
	if cj := js.Spec; cj.Schedule != "@daily" || *cj.JobTemplate.Spec.Parallelism != 4 || *cj.JobTemplate.Spec.BackoffLimit != 0 || cj.JobTemplate.Spec.ActiveDeadlineSeconds != nil {
		t.Errorf("schedule %q parallelism %d backoffLimit %d deadline %v; want @daily, 4 (all shards), 0, none", cj.Schedule, *cj.JobTemplate.Spec.Parallelism, *cj.JobTemplate.Spec.BackoffLimit, cj.JobTemplate.Spec.ActiveDeadlineSeconds)
	}
	// Disabled, the Job's ranges are not checked (the values are unused).
	render(t, "tune: {parallelism: -1, schedule: ''}\n")
}

// TestTuneRunsAsServe: tune reads serve's config against serve's
// Prometheus, so it needs what serve has to reach it: the environment
// (extraEnv: HTTPS_PROXY for proxy_from_environment) and the ServiceAccount
// given for workload identity to a managed Prometheus
// (serviceAccount.annotations). The tune pods had neither: the default
// account and no env, so every shard failed where serve succeeded. They
// run as serve's account (still no API token) with serve's extraEnv; with
// no account given they keep the namespace's default.
func TestTuneRunsAsServe(t *testing.T) {
	values := "tune: {enabled: true, results: {claimName: tune-results}}\n" + tunedTarget +
		"serviceAccount: {annotations: {eks.amazonaws.com/role-arn: 'arn:aws:iam::111122223333:role/prometheus-query'}}\n" +
		"extraEnv: [{name: HTTPS_PROXY, value: 'http://proxy.example:3128'}]\n"
	ps := only[*batchv1.CronJob](t, render(t, values)).Spec.JobTemplate.Spec.Template.Spec
	env := ps.Containers[0].Env
	if ps.ServiceAccountName != "infscale" || *ps.AutomountServiceAccountToken || len(env) != 1 || env[0].Name != "HTTPS_PROXY" || env[0].Value != "http://proxy.example:3128" {
		t.Errorf("tune pod: serviceAccountName %q automount %v env %+v; want infscale, false, HTTPS_PROXY=http://proxy.example:3128", ps.ServiceAccountName, *ps.AutomountServiceAccountToken, env)
	}
	ps = only[*batchv1.CronJob](t, render(t, "tune: {enabled: true, results: {claimName: tune-results}}\n"+tunedTarget)).Spec.JobTemplate.Spec.Template.Spec
	if ps.ServiceAccountName != "" || len(ps.Containers[0].Env) != 0 {
		t.Errorf("no account, no extraEnv: serviceAccountName %q env %+v; want none", ps.ServiceAccountName, ps.Containers[0].Env)
	}
}

// TestTuneTimeZone: tune.timeZone is the CronJob's spec.timeZone (the
// schedule read in that zone, not the kube-controller-manager's); unset,
// the field is absent; a value that is no zone name ("Berlin time") is
// refused at render naming the key.
func TestTuneTimeZone(t *testing.T) {
	values := func(tz string) string {
		return "tune: {enabled: true, results: {claimName: tune-results}, timeZone: '" + tz + "'}\n" + tunedTarget
	}
	cj := only[*batchv1.CronJob](t, render(t, values("Europe/Berlin")))
	if cj.Spec.TimeZone == nil || *cj.Spec.TimeZone != "Europe/Berlin" {
		t.Errorf("timeZone %v, want Europe/Berlin", cj.Spec.TimeZone)
	}
	if cj := only[*batchv1.CronJob](t, render(t, values(""))); cj.Spec.TimeZone != nil {
		t.Errorf("timeZone %q with none given, want the field absent", *cj.Spec.TimeZone)
	}
	if _, err := tryRender(values("Berlin time")); err == nil || !strings.Contains(err.Error(), "at '/tune/timeZone'") {
		t.Errorf("timeZone 'Berlin time': error %v, want one naming /tune/timeZone", err)
	}
}

// TestTunePodPlacement: the tune pods take tune.priorityClassName and
// tune.affinity, not serve's (a nightly batch job given serve's priority
// would preempt like the decision loop; serve's anti-affinity is about its
// own replicas), and serve's nodeSelector and tolerations as before.
func TestTunePodPlacement(t *testing.T) {
	objs := render(t, "priorityClassName: serve-critical\naffinity: {podAntiAffinity: {requiredDuringSchedulingIgnoredDuringExecution: [{topologyKey: kubernetes.io/hostname, labelSelector: {matchLabels: {app.kubernetes.io/name: infscale}}}]}}\nnodeSelector: {pool: cpu}\n"+
		"tune: {enabled: true, results: {claimName: tune-results}, priorityClassName: batch-low, affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: spot, operator: In, values: [\"true\"]}]}]}}}}\n"+tunedTarget)
	ps := only[*batchv1.CronJob](t, objs).Spec.JobTemplate.Spec.Template.Spec
	if ps.PriorityClassName != "batch-low" {
		t.Errorf("tune pods' priorityClassName %q, want batch-low", ps.PriorityClassName)
	}
	if a := ps.Affinity; a == nil || a.PodAntiAffinity != nil || a.NodeAffinity == nil ||
		a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms[0].MatchExpressions[0].Key != "spot" {
		t.Errorf("tune pods' affinity %+v, want tune.affinity's node affinity on spot only", a)
	}
	if ps.NodeSelector["pool"] != "cpu" {
		t.Errorf("tune pods' nodeSelector %v, want serve's {pool: cpu}", ps.NodeSelector)
	}
	d := only[*appsv1.Deployment](t, objs).Spec.Template.Spec
	if d.PriorityClassName != "serve-critical" || d.Affinity == nil || d.Affinity.PodAntiAffinity == nil {
		t.Errorf("serve's priorityClassName %q affinity %+v, want its own", d.PriorityClassName, d.Affinity)
	}
	ps = only[*batchv1.CronJob](t, render(t, "priorityClassName: serve-critical\ntune: {enabled: true, results: {claimName: tune-results}}\n"+tunedTarget)).Spec.JobTemplate.Spec.Template.Spec
	if ps.PriorityClassName != "" || ps.Affinity != nil {
		t.Errorf("by default the tune pods took priorityClassName %q affinity %+v, want none", ps.PriorityClassName, ps.Affinity)
	}
}

// TestTuneShardsFailAlone: a shard that keeps failing is retried
// tune.backoffLimitPerIndex times (2) and failed alone; the Job has no
// total backoffLimit by default (a Job-wide 3 let one shard's failures end
// the Job and stop the others mid-run); exit 2 (invalid input: the same
// config fails the same) fails its shard with no retry; a disrupted pod
// (evicted, preempted) is not counted. backoffLimit given is rendered.
func TestTuneShardsFailAlone(t *testing.T) {
	js := only[*batchv1.CronJob](t, render(t, "tune: {enabled: true, results: {claimName: tune-results}}\n"+tunedTarget)).Spec.JobTemplate.Spec
	if js.BackoffLimitPerIndex == nil || *js.BackoffLimitPerIndex != 2 || js.BackoffLimit != nil {
		t.Errorf("backoffLimitPerIndex %v backoffLimit %v, want 2 and unset", js.BackoffLimitPerIndex, js.BackoffLimit)
	}
	p := js.PodFailurePolicy
	if p == nil || len(p.Rules) != 2 {
		t.Fatalf("podFailurePolicy %+v, want two rules", p)
	}
	fail, ignore := p.Rules[0], p.Rules[1]
	if fail.Action != batchv1.PodFailurePolicyActionFailIndex || fail.OnExitCodes == nil || fail.OnExitCodes.ContainerName == nil ||
		*fail.OnExitCodes.ContainerName != js.Template.Spec.Containers[0].Name || fail.OnExitCodes.Operator != batchv1.PodFailurePolicyOnExitCodesOpIn ||
		!slices.Equal(fail.OnExitCodes.Values, []int32{2}) {
		t.Errorf("first rule %+v, want FailIndex on the tune container's exit code 2", fail)
	}
	if ignore.Action != batchv1.PodFailurePolicyActionIgnore || len(ignore.OnPodConditions) != 1 || ignore.OnPodConditions[0].Type != "DisruptionTarget" {
		t.Errorf("second rule %+v, want Ignore on DisruptionTarget", ignore)
	}
	js = only[*batchv1.CronJob](t, render(t, "tune: {enabled: true, backoffLimit: 10, backoffLimitPerIndex: 0, results: {claimName: tune-results}}\n"+tunedTarget)).Spec.JobTemplate.Spec
	if js.BackoffLimit == nil || *js.BackoffLimit != 10 || *js.BackoffLimitPerIndex != 0 {
		t.Errorf("backoffLimit %v backoffLimitPerIndex %v, want 10 and 0", js.BackoffLimit, js.BackoffLimitPerIndex)
	}
}

// TestTuneScheduleAsAPIServer: tune.schedule is refused at render when
// the API server would refuse the CronJob, naming the field and value.
// The schema checked five whitespace-separated words only, so `61 * * *
// *` (no minute 61) or a day of week 7 rendered, passed the config check,
// and failed `helm install` on the CronJob after the other objects were
// applied. The API server parses the schedule with robfig/cron's
// ParseStandard (k8s.io/kubernetes pkg/apis/batch/validation,
// validateScheduleFormat): each case's verdict, worked out from its field
// ranges (minute 0-59, hour 0-23, day of month 1-31, month 1-12, day of
// week 0-6, a range's start at most its end, a step of at least 1), is
// also checked against that parser.
func TestTuneScheduleAsAPIServer(t *testing.T) {
	for _, c := range []struct {
		schedule string
		ok       bool
	}{
		{"17 3 * * *", true},
		{"0 3-3 * * *", true},
		{"*/15 * * * *", true},
		{"0 0-23/2 * * 1-5", true},
		{"0 3 1,15 * *", true},
		{"30 4 * JAN,jul Mon-Fri", true},
		{"0 0 31 12 6", true},
		{"5 3 ? * sun", true},
		{"05 03 * * *", true},
		{" 17 3 * * * ", true},
		{"1,,2 * * * *", true}, // ParseStandard skips an empty list item
		{"*-5 * * * *", true},  // ParseStandard reads an item from * or ? on as *
		{"0 ?-3 * * *", true},
		{"0 0 * * *-x/2", true},
		{"@daily", true},
		{"@every 6h", true},
		{"@every 1h30m", true},
		{"61 * * * *", false},
		{"0 24 * * *", false},
		{"0 0 0 * *", false},
		{"0 0 32 * *", false},
		{"0 0 * 13 *", false},
		{"0 0 * * 7", false},
		{"*/0 * * * *", false},
		{"0 5-3 * * *", false},
		{"0 0 * * 1/2/3", false},
		{"0 0 * * mon-fry", false},
		{"17 3 * * * *", false},
		{"@dayly", false},
		{"@daily ", false},
		{"@every six hours", false},
	} {
		_, perr := cron.ParseStandard(c.schedule)
		if (perr == nil) != c.ok {
			t.Errorf("%q: ParseStandard error %v, want ok=%v (the case's verdict is wrong)", c.schedule, perr, c.ok)
		}
		_, err := tryRender("tune: {enabled: true, results: {claimName: tune-results}, schedule: '" + c.schedule + "'}\n" + tunedTarget)
		switch {
		case c.ok && err != nil:
			t.Errorf("%q: refused: %v", c.schedule, err)
		case !c.ok && (err == nil || !strings.Contains(err.Error(), "at '/tune/schedule'") && !strings.Contains(err.Error(), "tune.schedule: "+strconv.Quote(c.schedule))):
			t.Errorf("%q: error %v, want one naming tune.schedule", c.schedule, err)
		}
	}
}

// TestTuneScheduleMessages: a schedule refused for its values names the
// field, the value and the range, as worked out by hand from the API
// server's parser's ranges.
func TestTuneScheduleMessages(t *testing.T) {
	for _, c := range []struct{ schedule, want string }{
		{"61 * * * *", `tune.schedule: "61 * * * *": its minute field "61": 61 is not in 0-59`},
		{"0 0 * * 7", `its day of week field "7": 7 is not in 0-6`},
		{"0 0 * 0 *", `its month field "0": 0 is not in 1-12`},
		{"0 5-3 * * *", `its hour field "5-3": the range "5-3" runs backwards`},
		{"*/0 * * * *", `its minute field "*/0": the step of "*/0" must be a whole number of at least 1`},
		{"0 0 * * mon-fry", `its day of week field "mon-fry": "fry" is not a number or a name (sun, mon, tue, wed, thu, fri, sat)`},
	} {
		_, err := tryRender("tune: {enabled: true, results: {claimName: tune-results}, schedule: '" + c.schedule + "'}\n" + tunedTarget)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one containing %q", c.schedule, err, c.want)
		}
	}
}

// TestTuneTimeZoneAsAPIServer: a tune.timeZone of the right shape that is
// no zone ("Europe/Berln", "Mars/Olympus_Mons", "europe/berlin": the
// database's names are case-sensitive on Linux, where the API server runs)
// or "Local" (refused by the API server: the node's zone) fails the render
// naming the key, as the API server would refuse the CronJob at install;
// real zones render, among them the eight the database abbreviates UTC
// (which sprig's dateInZone also gives a zone it cannot load: the chart
// takes them from timezones.txt).
func TestTuneTimeZoneAsAPIServer(t *testing.T) {
	values := func(tz string) string {
		return "tune: {enabled: true, results: {claimName: tune-results}, timeZone: '" + tz + "'}\n" + tunedTarget
	}
	for _, tz := range []string{"Europe/Berlin", "America/Argentina/Buenos_Aires", "Asia/Kolkata", "Etc/GMT+5", "GMT", "UTC", "Etc/UTC", "UCT", "Etc/UCT", "Universal", "Etc/Universal", "Zulu", "Etc/Zulu"} {
		cj := only[*batchv1.CronJob](t, render(t, values(tz)))
		if cj.Spec.TimeZone == nil || *cj.Spec.TimeZone != tz {
			t.Errorf("timeZone %q rendered %v", tz, cj.Spec.TimeZone)
		}
	}
	for _, tz := range []string{"Europe/Berln", "Mars/Olympus_Mons", "Local", "local", "Europe/Atlantis"} {
		_, err := tryRender(values(tz))
		if err == nil || !strings.Contains(err.Error(), "tune.timeZone: "+strconv.Quote(tz)) {
			t.Errorf("timeZone %q: %v, want the render to fail naming tune.timeZone and the zone", tz, err)
		}
	}
	// Miscased, whatever the machine's disk: the API server's Linux
	// database is case-sensitive.
	if _, err := tryRender(values("europe/berlin")); err == nil || !strings.Contains(err.Error(), `tune.timeZone: "europe/berlin" is spelt "Europe/Berlin"`) {
		t.Errorf(`timeZone "europe/berlin": %v, want the render refused naming the spelling Europe/Berlin`, err)
	}
}

// TestTuneScheduleLikeParseStandard: on schedules drawn at random (a
// fixed seed) from cron's atoms, names, steps, ranges and robfig's odd
// forms (*-5, an empty item, a leading +), the render refuses exactly
// those robfig/cron's ParseStandard, the API server's parser, refuses.
func TestTuneScheduleLikeParseStandard(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	atoms := []string{"*", "?", "0", "1", "5", "7", "12", "23", "31", "59", "60", "mon", "FRI", "jan", "Dec", "sun", "+3", "03", "", "-", "/", ",", "*-5", "?-3", "H", "L", "1-5", "5/2", "*/0", "jan-mar"}
	for range 200 {
		fields := []string{"*", "1", "1", "1", "1"}
		for f := range fields {
			if r.IntN(3) > 0 {
				continue
			}
			var b strings.Builder
			for range 1 + r.IntN(3) {
				b.WriteString(atoms[r.IntN(len(atoms))])
			}
			fields[f] = b.String()
		}
		s := strings.Join(fields, " ")
		_, perr := cron.ParseStandard(s)
		_, err := tryRender("tune: {enabled: true, results: {claimName: tune-results}, schedule: '" + s + "'}\n" + tunedTarget)
		if (perr == nil) != (err == nil) {
			t.Errorf("%q: ParseStandard error %v, render error %v", s, perr, err)
		}
	}
}
