package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestServeBadListen: an address that is not host:port, or a port above
// 65535, is invalid input (exit 2) found before anything starts.
func TestServeBadListen(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"garbage", "must be host:port"},
		{"127.0.0.1:99999", `port "99999": allowed a port number 0..65535`},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), []string{"serve", "--config", "../../examples/serve-prometheus.yaml", "--listen", tc.addr}, nil, &out, &errb)
		if code != exitInvalid || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("--listen %s: exit %d, want 2 with %q:\n%s", tc.addr, code, tc.want, errb.String())
		}
	}
}

// TestServePathFlagsExit2: a path flag whose value names no usable place
// (a missing directory, a file where a directory is wanted) is a usage
// error, as a missing --config or --kubeconfig is: exit 2 naming the flag,
// before anything is bound or created. A missing --audit-log directory
// exited 1 while a directory given as --audit-log exited 2.
func TestServePathFlagsExit2(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "serve.yaml")
	os.WriteFile(cfg, []byte("interval: 1s\ntargets:\n- name: chat\n  scrape: [http://127.0.0.1:1/metrics]\n  metrics: [{type: queue, target: 24}]\n  max: 2\n"), 0o644)
	file := filepath.Join(dir, "afile")
	os.WriteFile(file, nil, 0o644)
	loop := filepath.Join(dir, "loop")
	if os.Symlink(loop+"2", loop) != nil || os.Symlink(loop, loop+"2") != nil {
		t.Skip("no symbolic links here")
	}
	for _, tc := range []struct {
		flag, value, want string
	}{
		{"--audit-log", filepath.Join(dir, "missing", "audit.jsonl"), "--audit-log " + filepath.Join(dir, "missing", "audit.jsonl") + ": directory " + filepath.Join(dir, "missing") + " does not exist"},
		{"--audit-log", filepath.Join(file, "audit.jsonl"), "--audit-log " + filepath.Join(file, "audit.jsonl") + ": " + file + " is not a directory"},
		{"--audit-log", dir, "--audit-log " + dir + ": is a directory"},
		{"--state-dir", file, "--state-dir " + file + ": is a file, not a directory"},
		{"--state-dir", filepath.Join(file, "st"), "--state-dir " + filepath.Join(file, "st") + ": " + file + " is not a directory"},
		// A loop of symbolic links names no place either: --audit-log was
		// exit 1 ("too many levels of symbolic links"), --state-dir exit 1
		// ("cannot be created: file exists").
		{"--audit-log", loop, "--audit-log " + loop + ": a loop of symbolic links"},
		{"--audit-log", filepath.Join(loop, "audit.jsonl"), "--audit-log " + filepath.Join(loop, "audit.jsonl") + ": a loop of symbolic links"},
		{"--state-dir", loop, "--state-dir " + loop + ": a loop of symbolic links"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var out, errb bytes.Buffer
		code := run(ctx, []string{"serve", "--config", cfg, "--listen", "127.0.0.1:0", tc.flag, tc.value}, nil, &out, &errb)
		cancel()
		if code != exitInvalid || !strings.Contains(errb.String(), tc.want) || strings.Contains(errb.String(), "serving") {
			t.Errorf("%s %s: exit %d, want 2 with %q before serving:\n%s", tc.flag, tc.value, code, tc.want, errb.String())
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "missing")); err == nil {
		t.Error("the missing --audit-log directory was created")
	}
}

// TestServeIOFailuresExit1: a --state-dir that is a directory serve may
// not write in is a runtime failure (the environment's, not the value's):
// exit 1 with the path named, nothing served.
func TestServeIOFailuresExit1(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "serve.yaml")
	os.WriteFile(cfg, []byte("interval: 1s\ntargets:\n- name: chat\n  scrape: [http://127.0.0.1:1/metrics]\n  metrics: [{type: queue, target: 24}]\n  max: 2\n"), 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	if _, err := os.Stat("/proc"); err != nil {
		t.Skip("no /proc for an unwritable directory")
	}
	code := run(ctx, []string{"serve", "--config", cfg, "--listen", "127.0.0.1:0", "--state-dir", "/proc"}, nil, &out, &errb)
	if code != exitRuntime || !strings.Contains(errb.String(), "state dir /proc is not writable") || strings.Contains(errb.String(), "serving") {
		t.Errorf("unwritable state dir: exit %d, want 1 before serving:\n%s", code, errb.String())
	}
}

// TestServeDemoFlags: the two demos are one or the other, and neither
// takes a config nor a flag it would ignore.
func TestServeDemoFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--demo", "--demo-zero"}, "give one"},
		{[]string{"serve", "--demo-zero", "--config", "x.yaml"}, "drop --config"},
		{[]string{"serve", "--demo-zero", "--demo-duration=-1s"}, "--demo-duration"},
		{[]string{"serve", "--demo-zero", "--demo-duration=1ms"}, "--demo-duration 1ms: want 10s to 1h"},
		{[]string{"serve", "--demo-zero", "--demo-duration=1ms"}, "(shorter leaves no room for a cold start and a scale-down)"},
		{[]string{"serve", "--demo", "--demo-duration=1000h"}, "--demo-duration 1000h: want 10s to 1h, e.g. 60s (a demo, not a service: serve --config runs until stopped)"},
		{[]string{"serve", "--demo-zero", "--config", "x.yaml"}, "--demo-zero runs its own fleet"},
		{[]string{"serve", "--demo", "--check-config"}, "--demo runs its own fleet and config, in memory, alone: --check-config does not apply to it; drop it"},
		{[]string{"serve", "--demo-zero", "--check-config"}, "--demo-zero runs its own fleet and config, in memory, alone: --check-config does not apply to it"},
		{[]string{"serve", "--demo", "--state-dir", "st"}, "--state-dir does not apply to it"},
		// A rotation flag alone is named, not "needs --audit-log",
		// which the demo then refuses.
		{[]string{"serve", "--demo", "--audit-log-maxsize", "5"}, "--demo runs its own fleet and config, in memory, alone: --audit-log-maxsize does not apply to it; drop it"},
		{[]string{"serve", "--demo-zero", "--audit-log-compress"}, "--demo-zero runs its own fleet and config, in memory, alone: --audit-log-compress does not apply to it; drop it"},
		{[]string{"serve", "--demo", "--audit-log", "a.jsonl"}, "--audit-log does not apply to it"},
		{[]string{"serve", "--demo", "--kubeconfig", "kc"}, "--kubeconfig does not apply to it"},
		{[]string{"serve", "--demo", "--leader-elect"}, "--leader-elect does not apply to it"},
		{[]string{"serve", "--config", "x.yaml", "--leader-elect", "--leader-elect-renew-deadline", "20s", "--check-config"}, "must be greater than --leader-elect-renew-deadline 20s"},
		{[]string{"serve", "--config", "x.yaml", "--leader-elect", "--leader-elect-resource-name", "Bad_Name"}, `--leader-elect-resource-name "Bad_Name": not a Lease name`},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), tc.args, nil, &out, &errb); code != exitInvalid || !strings.Contains(errb.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 mentioning %q", tc.args, code, errb.String(), tc.want)
		}
	}
}

// TestServePortInUse: serve on a port another process holds exits 1 at
// once, naming where the address came from (--listen, or the config's
// listen:) and what to do; it said only "listen ADDR: ... bind: address
// already in use".
func TestServePortInUse(t *testing.T) {
	addr, dir := heldPort(t), t.TempDir()
	cfg := writeServeConfig(t, dir, "listen: "+addr+"\n")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--config", cfg, "--listen", addr}, "--listen " + addr + ": address already in use: another process holds the port"},
		{[]string{"serve", "--config", cfg}, "listen " + addr + " (the config's listen:): address already in use: another process holds the port"},
	} {
		var out, errb bytes.Buffer
		code := run(ctx, tc.args, nil, &out, &errb)
		if code != exitRuntime || !strings.Contains(errb.String(), tc.want) || !strings.Contains(errb.String(), "give another with --listen HOST:PORT") {
			t.Errorf("%v: exit %d, stderr %q; want 1 with %q", tc.args, code, errb.String(), tc.want)
		}
		if ctx.Err() != nil {
			t.Fatal("serve did not exit on the bind error")
		}
	}
}

// TestServeBindFailureCreatesNothing: serve whose listen address another
// process holds exits 1 on the bind error and leaves nothing on disk; it
// used to create the --audit-log file and the --state-dir directory first.
func TestServeBindFailureCreatesNothing(t *testing.T) {
	addr, dir := heldPort(t), t.TempDir()
	cfg := writeServeConfig(t, dir, "")
	audit, state := filepath.Join(dir, "audit.jsonl"), filepath.Join(dir, "state")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code := run(ctx, []string{"serve", "--config", cfg, "--listen", addr, "--audit-log", audit, "--state-dir", state}, nil, &out, &errb)
	if want := "--listen " + addr + ": address already in use"; code != exitRuntime || !strings.Contains(errb.String(), want) {
		t.Fatalf("exit %d, stderr %q; want 1 with %q", code, errb.String(), want)
	}
	for _, p := range []string{audit, state} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s after the bind error: %v, want it absent", p, err)
		}
	}
}

// TestServeElectorFailureCreatesNoAuditLog: --leader-elect with a
// kubeconfig that cannot be read exits on that error before the
// --audit-log file is created (it was created first).
func TestServeElectorFailureCreatesNoAuditLog(t *testing.T) {
	dir := t.TempDir()
	cfg := writeServeConfig(t, dir, "")
	audit := filepath.Join(dir, "audit.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	var out, errb bytes.Buffer
	code := run(ctx, []string{"serve", "--config", cfg, "--listen", "127.0.0.1:0", "--audit-log", audit,
		"--leader-elect", "--kubeconfig", filepath.Join(dir, "no-kubeconfig")}, nil, &out, &errb)
	if code == 0 || !strings.Contains(errb.String(), "no-kubeconfig") {
		t.Fatalf("exit %d, stderr %q; want an error naming the kubeconfig", code, errb.String())
	}
	if _, err := os.Stat(audit); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("%s after the elector error: %v, want it absent", audit, err)
	}
}

// TestEmptyPathFlag: a path flag given an empty value (`--state-dir
// "$DIR"` with DIR unset) is refused, exit 2, naming the flag; kong made it
// the working directory, so serve wrote its state files where it was
// started and `--audit-log ""` said "--audit-log /home/me: is a directory".
func TestEmptyPathFlag(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "serve.yaml")
	if err := os.WriteFile(cfg, []byte("targets:\n- name: chat\n  scrape: [http://127.0.0.1:1/metrics]\n  metrics: [{type: queue, target: 24}]\n  maxReplicaCount: 2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, args := range [][]string{
		{"serve", "--config", cfg, "--listen", "127.0.0.1:0", "--state-dir", ""},
		{"serve", "--config", cfg, "--listen", "127.0.0.1:0", "--state-dir="},
		{"serve", "--config", cfg, "--listen", "127.0.0.1:0", "--audit-log", ""},
		{"serve", "--config", "", "--check-config"},
		{"gpu", "--calibration", ""},
	} {
		var out, errb bytes.Buffer
		code := run(ctx, args, nil, &out, &errb)
		flag := strings.TrimSuffix(args[len(args)-2], "=")
		if args[len(args)-1] == "--state-dir=" {
			flag = "--state-dir"
		}
		if args[len(args)-1] == "--check-config" {
			flag = "--config"
		}
		want := flag + ": an empty path (an unset variable?): give a path, or leave the flag out"
		if code != exitInvalid || !strings.Contains(errb.String(), want) {
			t.Errorf("%q: exit %d, stderr %q; want 2 with %q", args, code, errb.String(), want)
		}
	}
	// "." is still the working directory, given on purpose.
	var out, errb bytes.Buffer
	if code := run(ctx, []string{"serve", "--config", cfg, "--check-config", "--state-dir", "."}, nil, &out, &errb); code == exitInvalid && strings.Contains(errb.String(), "empty path") {
		t.Errorf("--state-dir .: refused as empty: %s", errb.String())
	}
}

// TestServeStartFailureRemovesNewAuditLog: a start that fails after the
// audit log is opened (here the state directory cannot be made: /proc
// takes no new directory, even as root; a --state-dir under a file is
// refused before anything is opened) removes the empty file it created,
// and leaves a file that was there before alone.
func TestServeStartFailureRemovesNewAuditLog(t *testing.T) {
	if _, err := os.Stat("/proc"); err != nil {
		t.Skip("no /proc for a directory that cannot be made")
	}
	dir := t.TempDir()
	cfg := writeServeConfig(t, dir, "")
	state := "/proc/infscale-state"
	for _, existed := range []bool{false, true} {
		audit := filepath.Join(dir, fmt.Sprintf("audit-%v.jsonl", existed))
		if existed {
			if err := os.WriteFile(audit, nil, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		var out, errb bytes.Buffer
		code := run(ctx, []string{"serve", "--config", cfg, "--listen", "127.0.0.1:0", "--audit-log", audit, "--state-dir", state}, nil, &out, &errb)
		cancel()
		if code == 0 || !strings.Contains(errb.String(), "state") {
			t.Fatalf("exit %d, stderr %q; want an error about the state directory", code, errb.String())
		}
		_, err := os.Stat(audit)
		switch {
		case !existed && !errors.Is(err, fs.ErrNotExist):
			t.Errorf("the audit log this start created: %v after the failed start, want it removed", err)
		case existed && err != nil:
			t.Errorf("the audit log that was there before: %v, want it kept", err)
		}
	}
}

// writeServeConfig writes dir/serve.yaml: head, then one embedded-mode
// target (chat, scraping a port nothing listens on), and returns its path.
func writeServeConfig(t *testing.T, dir, head string) string {
	t.Helper()
	cfg := filepath.Join(dir, "serve.yaml")
	body := head + "targets:\n- name: chat\n  scrape: [http://127.0.0.1:1/metrics]\n  metrics: [{type: queue, target: 24}]\n  maxReplicaCount: 2\n"
	if err := os.WriteFile(cfg, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg
}

// heldPort is a loopback address whose port this test holds until it ends
// (a port in use).
func heldPort(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	return ln.Addr().String()
}
