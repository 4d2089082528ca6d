package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestServeLeaderElectFlags: timings client-go would refuse are exit 2
// naming the flags; so is a kubeconfig that does not exist (a missing
// input file, as --config's), and nothing is served in either case.
func TestServeLeaderElectFlags(t *testing.T) {
	cfg := "../../examples/serve-prometheus.yaml"
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--leader-elect-renew-deadline", "20s"}, exitInvalid,
			"--leader-elect-lease-duration 15s must be greater than --leader-elect-renew-deadline 20s"},
		// 1.2 × 2s = 2.4s: a renew deadline of 2s leaves no retry.
		{[]string{"--leader-elect-lease-duration", "3s", "--leader-elect-renew-deadline", "2s"}, exitInvalid,
			"--leader-elect-renew-deadline 2s must be greater than 1.2 × --leader-elect-retry-period 2s"},
		{[]string{"--kubeconfig", filepath.Join(t.TempDir(), "absent")}, exitInvalid, "kubeconfig"},
	} {
		var out, errb bytes.Buffer
		args := append([]string{"serve", "--config", cfg, "--listen", "127.0.0.1:0", "--leader-elect"}, tc.args...)
		code := run(context.Background(), args, nil, &out, &errb)
		if code != tc.code || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d and %q", tc.args, code, errb.String(), tc.code, tc.want)
		}
		if strings.Contains(errb.String(), "serving") {
			t.Errorf("%v: served: %s", tc.args, errb.String())
		}
	}
}

// TestServeLeaderElectFlagsNeedLeaderElect: a --leader-elect-* flag without
// --leader-elect (even at its default value) is refused, exit 2 naming it,
// instead of being ignored; nothing is served. --check-config checks it too.
func TestServeLeaderElectFlagsNeedLeaderElect(t *testing.T) {
	cfg := "../../examples/serve-prometheus.yaml"
	for _, tc := range []struct {
		args []string
		flag string
	}{
		{[]string{"--leader-elect-lease-duration", "15s"}, "leader-elect-lease-duration"},
		{[]string{"--leader-elect-renew-deadline=20s"}, "leader-elect-renew-deadline"},
		{[]string{"--leader-elect-retry-period", "1s"}, "leader-elect-retry-period"},
		{[]string{"--leader-elect-resource-name", "infscale"}, "leader-elect-resource-name"},
		{[]string{"--leader-elect-resource-namespace", "llm"}, "leader-elect-resource-namespace"},
		{[]string{"--leader-elect-identity", "a"}, "leader-elect-identity"},
		{[]string{"--check-config", "--leader-elect-lease-duration", "20s"}, "leader-elect-lease-duration"},
	} {
		var out, errb bytes.Buffer
		args := append([]string{"serve", "--config", cfg, "--listen", "127.0.0.1:0"}, tc.args...)
		code := run(context.Background(), args, nil, &out, &errb)
		want := "--" + tc.flag + " needs --leader-elect"
		if code != exitInvalid || out.Len() != 0 || !strings.Contains(errb.String(), want) || strings.Contains(errb.String(), "serving") {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and %q", tc.args, code, out.String(), errb.String(), want)
		}
	}
}

// TestServeKubeconfigForLease: --leader-elect makes a Kubernetes client
// for its Lease even when no target names a scaleTargetRef (a Prometheus
// config), so a kubeconfig that does not exist is exit 2 naming it. The
// --kubeconfig help and docs/serve.md said that no client is made without
// a scaleTargetRef, and docs/serve.md that a missing configuration is
// exit 1.
func TestServeKubeconfigForLease(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "absent")
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"serve", "--config", "../../examples/serve-prometheus.yaml", "--listen", "127.0.0.1:0", "--leader-elect", "--kubeconfig", missing}, nil, &out, &errb)
	if code != exitInvalid || !strings.Contains(errb.String(), "kubeconfig "+missing) {
		t.Errorf("a Prometheus config with --leader-elect and a missing kubeconfig: exit %d, %q; want 2 naming the file", code, errb.String())
	}
	help, err := os.ReadFile("../../docs/cli/serve.md")
	if err != nil {
		t.Fatal(err)
	}
	doc, err := os.ReadFile("../../docs/serve.md")
	if err != nil {
		t.Fatal(err)
	}
	flat := func(b []byte) string { return strings.Join(strings.Fields(string(b)), " ") }
	if !strings.Contains(flat(help), "kubeconfig for targets with a scaleTargetRef and for --leader-elect") {
		t.Error("serve --help: --kubeconfig does not name --leader-elect's Lease")
	}
	if d := flat(doc); !strings.Contains(d, "and for `--leader-elect`'s Lease") || !strings.Contains(d, "is exit 2 at start, naming the file") {
		t.Error("docs/serve.md: the --kubeconfig row does not name --leader-elect's Lease, or not exit 2")
	}
}

// TestServeLeaderElectInProcessAdopt: with --leader-elect (several
// replicas), a target that adopts what it tunes in process is refused,
// exit 2 naming the flag, the file and the target, before anything
// starts (--check-config too): each replica tuned on its own history
// window (two runs 35 s apart chose different winners on the same week),
// and KEDA's max() over the replicas decided on the larger candidate.
// The same target reading a tune.dir, or in shadow mode, is accepted.
func TestServeLeaderElectInProcessAdopt(t *testing.T) {
	dir := t.TempDir()
	write := func(name, tune string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(`prometheus: {url: "http://127.0.0.1:1"}
targets:
- name: chat
  selector: '{namespace="llm"}'
  metrics: [{type: queue, target: 24}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  maxReplicaCount: 8
  tune: `+tune+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	adopt := write("adopt.yaml", "{mode: adopt}")
	for _, extra := range [][]string{nil, {"--check-config"}} {
		var out, errb bytes.Buffer
		args := append([]string{"serve", "--config", adopt, "--listen", "127.0.0.1:0", "--leader-elect"}, extra...)
		code := run(context.Background(), args, nil, &out, &errb)
		want := "--leader-elect: " + adopt + `: targets[0].tune (target "chat"): mode: adopt tunes in process, and with several replicas (--leader-elect) each tunes on its own history`
		if code != exitInvalid || !strings.Contains(errb.String(), want) || strings.Contains(errb.String(), "serving") {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", extra, code, errb.String(), want)
		}
	}
	for _, tune := range []string{"{mode: adopt, dir: " + dir + "}", "{mode: shadow}"} {
		var out, errb bytes.Buffer
		code := run(context.Background(), []string{"serve", "--config", write("ok.yaml", tune), "--check-config", "--leader-elect"}, nil, &out, &errb)
		if code != exitOK {
			t.Errorf("%s: exit %d, stderr %q; want it accepted", tune, code, errb.String())
		}
	}
}

// TestServeKubeconfigUnused: --kubeconfig with no scaleTargetRef target
// and no --leader-elect was accepted silently (the demos refuse the flags
// they ignore); it is a warning naming the flag and the config.
func TestServeKubeconfigUnused(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"serve", "--config", "../../examples/serve-prometheus.yaml", "--check-config", "--kubeconfig", "/nonexistent/kubeconfig"}, nil, &out, &errb)
	want := "infscale: warning: --kubeconfig /nonexistent/kubeconfig is not used: no target of "
	rest := "examples/serve-prometheus.yaml has a scaleTargetRef and --leader-elect is off"
	if code != 0 || !strings.Contains(errb.String(), want) || !strings.Contains(errb.String(), rest) {
		t.Errorf("exit %d, stderr %q; want 0 and %q", code, errb.String(), want)
	}
}
