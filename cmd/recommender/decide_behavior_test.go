package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A --behavior file is read as serve's configuration reads its behavior:
// every problem at once, each at FILE:LINE:COL under its YAML path, no Go
// type names. It said only "cannot unmarshal string into Go struct field
// HorizontalPodAutoscalerBehavior.ScaleUp of type int32", and the unknown
// key and the negative value showed one fix at a time.
func TestDecideBehaviorEveryProblem(t *testing.T) {
	path := filepath.Join(t.TempDir(), "beh.yaml")
	yaml := "scaleUp:\n" +
		"  stabilizationWindowSeconds: abc\n" + // value at column 31 ("  stabilizationWindowSeconds: " is 30)
		"  periodSecs: 15\n" + // key at column 3
		"scaleDown:\n" +
		"  policies:\n" +
		"  - type: Pods\n" +
		"    value: -4\n" + // value at column 12 ("    value: " is 11)
		"    periodSeconds: 15\n"
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runDecide(t, "--queue", "1", "--behavior", path)
	want := "infscale: --behavior: 3 problems in " + path + ":\n" +
		path + ":2:31: behavior.scaleUp.stabilizationWindowSeconds: expected an integer, got the string \"abc\"\n" +
		path + ":3:3: behavior.scaleUp.periodSecs: unknown key; allowed here: policies, selectPolicy, stabilizationWindowSeconds, tolerance\n" +
		path + ":7:12: behavior.scaleDown.policies[0].value: -4 must be >= 1\n"
	if code != exitInvalid || out != "" || !strings.HasPrefix(errs, want) {
		t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant exit 2 and, first:\n%s", code, out, errs, want)
	}
	if strings.Contains(errs, "Go struct") || strings.Contains(errs, "int32") {
		t.Errorf("a Go type leaks: %s", errs)
	}
}
