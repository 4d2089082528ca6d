package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestTuneNamesItsFlags: tune's refusals name the flag they are about.
// A 1.5 s trace cannot be split into two parts of a 15 s period each: its
// error names --trace, as simulate's do (it began "short.csv: ..."). A
// 1-minute range at a 5-minute step holds no step: the error names
// --start, --end and --step (it said only "range ... is shorter than one
// step").
func TestTuneNamesItsFlags(t *testing.T) {
	dir := t.TempDir()
	tr := filepath.Join(dir, "short.csv")
	if err := os.WriteFile(tr, []byte("0,100,10\n1.5,100,10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"tune", "--trace", tr, "-q"}, "infscale: --trace: short.csv: trace too short to tune on: "},
		{[]string{"tune", "--trace", "-", "-q"}, "infscale: --trace: \"-\" is standard input, which is not read: "},
		{[]string{"tune", "--prometheus-url", "http://127.0.0.1:1", "--selector", `{a="b"}`, "--start", "2026-01-01T00:00:00Z", "--end", "2026-01-01T00:01:00Z", "--step", "5m", "-q"},
			"infscale: --start 2026-01-01T00:00:00Z, --end 2026-01-01T00:01:00Z, --step 5m0s: range 2026-01-01T00:00:00Z..2026-01-01T00:01:00Z is shorter than one step (5m0s): want a longer range or a shorter step"},
		{[]string{"backtest", "--prometheus-url", "http://127.0.0.1:1", "--selector", `{a="b"}`, "--start", "2026-01-01T00:00:00Z", "--end", "2026-01-01T00:01:00Z", "--step", "5m", "-q"},
			"infscale: --start 2026-01-01T00:00:00Z, --end 2026-01-01T00:01:00Z, --step 5m0s: range"},
	} {
		var out, errb bytes.Buffer
		code := run(context.Background(), tc.args, strings.NewReader(""), &out, &errb)
		if code != exitInvalid || !strings.HasPrefix(errb.String(), tc.want) {
			t.Errorf("%s: exit %d, stderr %q\nwant exit %d, stderr starting %q", strings.Join(tc.args, " "), code, errb.String(), exitInvalid, tc.want)
		}
	}
}
