package main

import (
	"bytes"
	"context"
	"os"
	"strings"
	"testing"
)

// TestDashFileFlagRefused: "-" given to a flag that names a file or
// directory is read by operators as stdout (or stdin), but these flags
// took it as a file named "-" in the working directory: `decide --state -`
// and `synth-week --openmetrics -` wrote ./-, `synth-week --data -` made a
// TSDB directory ./-, `serve --audit-log -` appended to ./-. Each is now
// exit 2 naming the flag, before anything runs or is written; a file named
// "-" is still reachable as ./-.
func TestDashFileFlagRefused(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, args := range [][]string{
		{"decide", "--queue", "10", "--current", "1", "--state", "-"},
		{"kube", "--deployment", "x", "--state", "-"},
		{"synth-week", "--data", "-", "--promtool", "/bin/true", "--days", "1"},
		{"synth-week", "--data", "w", "--promtool", "/bin/true", "--days", "1", "--openmetrics", "-"},
		{"serve", "--demo", "--audit-log", "-"},
		{"serve", "--demo", "--state-dir", "-"},
		{"load", "http://127.0.0.1:1", "--concurrency", "1,2", "--calibrate", "-"},
		{"backtest", "--prometheus-url", "http://127.0.0.1:1", "--calibrate", "-"},
		{"tune", "--trace", "reference", "--plot", "-"},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(""), &out, &errb)
		flag := args[len(args)-2]
		if args[0] == "synth-week" && args[2] == "-" {
			flag = "--data"
		}
		if code != exitInvalid || !strings.Contains(errb.String(), flag+" -:") || !strings.Contains(errb.String(), "./-") {
			t.Errorf("%v: exit %d, stderr %q; want 2 naming %s - and ./-", args, code, errb.String(), flag)
		}
		if left, _ := os.ReadDir("."); len(left) != 0 {
			t.Fatalf("%v left %v in the working directory", args, left)
		}
	}
}

// TestDashURLPathNotAFileFlag: kube --path is a URL path on the pods, not a
// file: "-" there is refused as a path without its leading /, not as a
// file flag given "-" (whose hint, ./-, names a file).
func TestDashURLPathNotAFileFlag(t *testing.T) {
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"kube", "--deployment", "x", "--path", "-"}, strings.NewReader(""), &out, &errb)
	if code != exitInvalid || !strings.Contains(errb.String(), "a path starts with /") || strings.Contains(errb.String(), "./-") {
		t.Errorf("kube --path -: exit %d, stderr %q; want 2 saying a path starts with /", code, errb.String())
	}
}
