package main

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
)

// replicaCommands are the commands that model a replica (ReplicaFlags).
var replicaCommands = []string{"gpu", "simulate", "backtest", "profile", "tune", "decide", "kube", "fleet", "load"}

// TestReplicaFlagsOneSpelling: every command with the replica flags
// documents them under one spelling (--gpu, --model, --tp, --calibration),
// none shows the old --replica-* spelling, and no help points at a flag
// its command lacks (load --help once sent fleet users to --calibration
// while fleet only took --replica-calibration).
func TestReplicaFlagsOneSpelling(t *testing.T) {
	flagRE := regexp.MustCompile(`(?m)^\s+(?:-\w, )?(--[a-z0-9-]+)`)
	for _, cmd := range replicaCommands {
		var out, errb bytes.Buffer
		if code := run(context.Background(), []string{cmd, "--help"}, strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("%s --help: exit %d %s", cmd, code, errb.String())
		}
		help := out.String()
		flags := map[string]bool{}
		for _, m := range flagRE.FindAllStringSubmatch(help, -1) {
			flags[m[1]] = true
		}
		for _, f := range []string{"--gpu", "--model", "--tp", "--calibration", "--calibrated"} {
			if !flags[f] {
				t.Errorf("%s --help lists no %s", cmd, f)
			}
		}
		if strings.Contains(help, "--replica-") {
			t.Errorf("%s --help shows the deprecated --replica-* spelling:\n%s", cmd, help)
		}
	}
}

// TestReplicaFlagsOldSpelling: --replica-gpu (decide, kube, fleet and load
// took it) still works, with one deprecation line on stderr naming the new
// flag, and gives what --gpu gives.
func TestReplicaFlagsOldSpelling(t *testing.T) {
	gpu := func(args ...string) (string, string) {
		var out, errb bytes.Buffer
		if code := run(context.Background(), append([]string{"gpu"}, args...), strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("gpu %v: exit %d %s", args, code, errb.String())
		}
		return out.String(), errb.String()
	}
	newOut, newErr := gpu("--gpu", "l4", "--tp", "1")
	oldOut, oldErr := gpu("--replica-gpu=l4", "--replica-tp", "1")
	if newOut != oldOut {
		t.Errorf("--replica-gpu l4 printed\n%s\nwant what --gpu l4 prints:\n%s", oldOut, newOut)
	}
	if newErr != "" {
		t.Errorf("--gpu: stderr %q, want nothing", newErr)
	}
	want := "infscale: --replica-gpu is deprecated and goes in the next release; use --gpu\n" +
		"infscale: --replica-tp is deprecated and goes in the next release; use --tp\n"
	if oldErr != want {
		t.Errorf("--replica-gpu: stderr %q, want %q", oldErr, want)
	}
}

// TestOldSpellingOfAnotherCommand: an old spelling of a flag serve does
// not have (--replica-gpu is decide's, kube's, ...) is an unknown flag
// there, without a deprecation line saying "use --gpu", a flag serve does
// not have either; decide, whose flag it is, still warns before its
// error.
func TestOldSpellingOfAnotherCommand(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--replica-gpu", "h100"}, "infscale: unknown flag --replica-gpu\n"},
		{[]string{"decide", "--replica-gpu", "h100", "--no-such-flag"}, "infscale: --replica-gpu is deprecated and goes in the next release; use --gpu\ninfscale: unknown flag --no-such-flag\n"},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), tc.args, strings.NewReader(""), &out, &errb); code != exitInvalid || errb.String() != tc.want {
			t.Errorf("%v: exit %d, stderr %q; want %d and %q", tc.args, code, errb.String(), exitInvalid, tc.want)
		}
	}
}

// TestLoadModelIsTheReplicaModel: load's --model is the replica model (for
// --calibrate) as in every command; given without --calibrate (where it
// once was the requests' model field) it is refused, naming
// --served-model-name.
func TestLoadModelIsTheReplicaModel(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"load", "http://127.0.0.1:1", "--concurrency", "1", "--model", "x"}, strings.NewReader(""), &out, &errb)
	if code != exitInvalid || !strings.Contains(errb.String(), "--served-model-name") {
		t.Errorf("load --model without --calibrate: exit %d, stderr %q; want 2 naming --served-model-name", code, errb.String())
	}
}
