package main

import (
	"bytes"
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeBadConfig: every problem is printed with file:line:col and the
// process exits 2 without serving.
func TestServeBadConfig(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"serve", "--config", "../../pkg/config/testdata/mixed.bad.yaml", "--listen", "127.0.0.1:0"}, nil, &out, &errb)
	if code != exitInvalid {
		t.Fatalf("exit %d, want 2; stderr:\n%s", code, errb.String())
	}
	for _, want := range []string{
		"13 problem(s) in the configuration",
		"mixed.bad.yaml:3:3: prometheus.timout: unknown key",
		"mixed.bad.yaml:10:12: targets[0].metrics[0].type: unknown signal \"qeue\"",
		"mixed.bad.yaml:20:3: targets[0].lookahed: unknown key",
	} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr lacks %q:\n%s", want, errb.String())
		}
	}
}

func TestServeCheckConfig(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"serve", "--check-config", "--config", "../../examples/serve-prometheus.yaml"}, nil, &out, &errb)
	if code != exitOK || !strings.Contains(out.String(), "valid: 2 target(s), prometheus http://prometheus.monitoring:9090, every 15s") {
		t.Errorf("exit %d\nstdout %s\nstderr %s", code, out.String(), errb.String())
	}
	code = run(context.Background(), []string{"serve"}, nil, &out, &errb)
	if code != exitInvalid {
		t.Errorf("serve without --config: exit %d, want 2", code)
	}
	// A port net/url takes but TCP has not: refused at the value, line 1
	// column 19 ("prometheus: {url: " is 18 characters).
	bad := filepath.Join(t.TempDir(), "port.yaml")
	os.WriteFile(bad, []byte("prometheus: {url: 'http://127.0.0.1:99999'}\ntargets:\n- name: chat\n  selector: '{pod=\"x\"}'\n  metrics: [{type: queue, target: 8}]\n  max: 4\n"), 0o644)
	out.Reset()
	errb.Reset()
	code = run(context.Background(), []string{"serve", "--check-config", "--config", bad}, nil, &out, &errb)
	if want := bad + `:1:19: prometheus.url: "http://127.0.0.1:99999": port 99999: want 1 to 65535`; code != exitInvalid || !strings.Contains(errb.String(), want) {
		t.Errorf("port 99999: exit %d, stderr %q; want 2 and %q", code, errb.String(), want)
	}
}

// TestServeRunsAndStops serves an embedded config until the context ends
// (as SIGTERM does through main's NotifyContext) and exits 0; the audit log
// gets one JSON line per decision.
func TestServeRunsAndStops(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "serve.yaml")
	os.WriteFile(cfg, []byte("interval: 1s\ntargets:\n- name: chat\n  scrape: [http://127.0.0.1:1/metrics]\n  metrics: [{type: queue, target: 24}]\n  max: 2\n"), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
	defer cancel()
	var out, errb bytes.Buffer
	audit := filepath.Join(dir, "audit.jsonl")
	code := run(ctx, []string{"serve", "--config", cfg, "--listen", "127.0.0.1:0", "--state-dir", filepath.Join(dir, "state"), "--audit-log", audit}, nil, &out, &errb)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "serving") || !strings.Contains(errb.String(), "stopped") {
		t.Errorf("logs lack start/stop:\n%s", errb.String())
	}
	// The only replica is unreachable: no current replicas known, so no
	// decision and no audit line; the read errors are logged.
	if !strings.Contains(errb.String(), "signal read failed") {
		t.Errorf("read failure not logged:\n%s", errb.String())
	}
}

func TestFleetBadFlags(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"fleet", "--replicas", "9", "--max", "2"}, nil, &out, &errb); code != exitInvalid {
		t.Errorf("exit %d, want 2", code)
	}
	// An absurd or non-numeric rate is refused before anything starts (1e12
	// req/s grew to 24 GB and never answered SIGTERM).
	for _, r := range []string{"1e12", "NaN", "+Inf", "10001", "-1"} {
		errb.Reset()
		if code := run(context.Background(), []string{"fleet", "--rate=" + r}, nil, &out, &errb); code != exitInvalid || !strings.Contains(errb.String(), "--rate") {
			t.Errorf("--rate=%s: exit %d, %q; want 2 naming --rate", r, code, errb.String())
		}
	}
}

// TestFleetBadTimingAndFollow: a poll or print interval outside 100ms..1h
// (0s panicked in time.NewTicker, 1ns busy-looped), a negative cold start,
// and a --follow URL that is not http(s) with a host are refused before
// anything starts, with exit 2 and a message naming the flag and range.
func TestFleetBadTimingAndFollow(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--follow", "http://127.0.0.1:1/metrics", "--follow-every", "0s"}, "--follow-every 0s: want 100ms to 1h"},
		{[]string{"--follow", "http://127.0.0.1:1/metrics", "--follow-every", "1ns"}, "--follow-every 1ns: want 100ms to 1h"},
		{[]string{"--follow-every=-1s"}, "--follow-every -1s: want 100ms to 1h"},
		{[]string{"--follow-every", "2h"}, "--follow-every 2h: want 100ms to 1h"},
		{[]string{"--follow-every", "10s"}, "--follow-every needs --follow"},
		// --target without --follow started a fleet that followed nothing.
		{[]string{"--target", "chat"}, "--target needs --follow"},
		{[]string{"--status", "1ns"}, "--status 1ns: want 100ms to 1h (or 0 for never"},
		{[]string{"--status=-5s"}, "--status -5s: want 100ms to 1h"},
		{[]string{"--cold-start=-1s"}, "--cold-start -1s: want a duration >= 0"},
		{[]string{"--follow", "ftp://x"}, `--follow "ftp://x": want http://HOST[:PORT][/PATH] or https://...`},
		{[]string{"--follow", "not a url"}, `--follow "not a url": want http://HOST[:PORT][/PATH]`},
		{[]string{"--follow", "http:///metrics"}, `--follow "http:///metrics": want http://HOST`},
		{[]string{"--follow", "http://127.0.0.1:99999/metrics"}, `--follow "http://127.0.0.1:99999/metrics": port 99999: want 1 to 65535`},
	} {
		var out, errb bytes.Buffer
		code := run(t.Context(), append([]string{"fleet"}, tc.args...), nil, &out, &errb)
		if code != exitInvalid || out.Len() != 0 || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2, nothing on stdout, %q", tc.args, code, out.String(), errb.String(), tc.want)
		}
	}
}

// TestFleetRuns starts the simulated fleet until the context ends and
// checks that it prints an embedded serve config with one URL per slot.
func TestFleetRuns(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	var out, errb bytes.Buffer
	if code := run(ctx, []string{"fleet", "--max", "3", "--rate", "5", "--status", "0"}, nil, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if n := strings.Count(out.String(), "  - http://127.0.0.1:"); n != 3 || !strings.Contains(out.String(), "server: vllm") {
		t.Errorf("want an embedded config with 3 URLs:\n%s", out.String())
	}
}

// TestServeDemoPortInUse: serve --demo on a port in use exits 1 with the
// bind error and prints nothing on stdout (no banner, no table header).
func TestServeDemoPortInUse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	for _, demo := range []string{"--demo", "--demo-zero"} {
		var out, errb bytes.Buffer
		code := run(t.Context(), []string{"serve", demo, "--listen", ln.Addr().String()}, nil, &out, &errb)
		if code != exitRuntime || out.Len() != 0 || !strings.Contains(errb.String(), "address already in use") {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 1, nothing printed, the bind error", demo, code, out.String(), errb.String())
		}
	}
}

// TestCheckConfigCountsPairs: --check-config says which targets are
// prefill/decode pairs (two pools each, decided and exported per role).
func TestCheckConfigCountsPairs(t *testing.T) {
	path := filepath.Join(t.TempDir(), "pd.yaml")
	cfg := `prometheus: {url: http://prometheus:9090}
targets:
  - name: chat
    replica: {gpu: h100-sxm, model: llama-3-8b}
    roles:
      prefill: {selector: '{llm_d_ai_role="prefill"}', metrics: [{type: demand, target: 0.9}], maxReplicaCount: 8}
      decode: {selector: '{llm_d_ai_role="decode"}', metrics: [{type: demand, target: 0.9}], maxReplicaCount: 8}
  - name: code
    selector: '{app="code"}'
    metrics: [{type: queue, target: 24}]
    maxReplicaCount: 4
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"serve", "--config", path, "--check-config"}, nil, &out, &errb); code != exitOK || !strings.Contains(out.String(), "valid: 2 target(s) (1 of them a prefill/decode pair, 2 pools each), prometheus http://prometheus:9090") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, out.String(), errb.String())
	}
}

// TestCheckConfigWarnsSLOBucket: a vLLM target tuned in adopt mode with
// the default slo_ttft (2s, inside vLLM's TTFT bucket (1s, 2.5s]) loads,
// and serve says on stderr that the live-miss check counts only the
// requests above 2.5s, naming the bounds to give.
func TestCheckConfigWarnsSLOBucket(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tune.yaml")
	if err := os.WriteFile(path, []byte(`prometheus: {url: http://prometheus:9090}
targets:
- name: chat
  selector: '{namespace="llm"}'
  metrics: [{type: queue, target: 24}]
  maxReplicaCount: 8
  replica: {gpu: h100-sxm, model: llama-3-8b}
  tune: {mode: adopt, dir: /var/lib/infscale/tune}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb strings.Builder
	code := run(context.Background(), []string{"serve", "--config", path, "--check-config"}, nil, &out, &errb)
	want := "infscale: warning: " + path + ":8:9: targets[0].tune.slo_ttft: 2s (the default) is inside vllm's TTFT bucket (1s, 2s500ms]: the live-miss check that reverts an adopted candidate counts only the requests above 2s500ms as late; give 1s or 2s500ms, a bucket bound, for an exact count (docs/tune.md) (target \"chat\")\n"
	if code != exitOK || errb.String() != want {
		t.Errorf("exit %d, stderr %q\nwant %q", code, errb.String(), want)
	}
}
