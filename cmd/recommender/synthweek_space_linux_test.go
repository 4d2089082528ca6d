//go:build linux

package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestSynthWeekNoSpaceSaysWhat: a disk that fills while synth-week writes
// names the destination flag and says how much room the days need, both
// when its own OpenMetrics write is cut (here a 1 MB file size limit in a
// child process: EFBIG, as ENOSPC cuts it) and when promtool runs out of
// room writing the blocks. Before, the message named only the temporary
// file (".data.synth-week-NNN/week.om: no space left on device").
// 2 days at a 60 s scrape: 18 MB a day (119 MB for the measured 7-day
// week), 36 MB.
func TestSynthWeekNoSpaceSaysWhat(t *testing.T) {
	if data := os.Getenv("INFSCALE_SYNTHWEEK_FSIZE_CHILD"); data != "" {
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 1 << 20, Max: 1 << 20}); err != nil {
			panic(err)
		}
		os.Exit(run(context.Background(), []string{"synth-week", "--data", data, "--promtool", "/bin/true", "--days", "2"}, strings.NewReader(""), os.Stdout, os.Stderr))
	}
	dir := t.TempDir()
	data := filepath.Join(dir, "data")
	cmd := exec.Command(os.Args[0], "-test.run=^TestSynthWeekNoSpaceSaysWhat$")
	cmd.Env = append(os.Environ(), "INFSCALE_SYNTHWEEK_FSIZE_CHILD="+data)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Fatalf("child: %v, stderr %q; want exit 1", err, stderr.String())
	}
	for _, want := range []string{"--data " + data + ":", "file too large", "2 days at a 1m scrape: about 36 MB"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr %q lacks %q", stderr.String(), want)
		}
	}

	fake := filepath.Join(dir, "promtool")
	script := "#!/bin/sh\necho 'write /x/tsdb/01J/chunks/000001: no space left on device' >&2\nexit 1\n"
	if err := os.WriteFile(fake, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"synth-week", "--data", data, "--promtool", fake, "--days", "1", "--scrape", "2m"}, strings.NewReader(""), &out, &errb)
	if code != 1 {
		t.Fatalf("exit %d, stderr %q; want 1", code, errb.String())
	}
	// 1 day at 2 m: 18 x 60 / 120 = 9 MB.
	for _, want := range []string{"--data " + data + ":", "no space left on device", "1 day at a 2m scrape: about 9 MB"} {
		if !strings.Contains(errb.String(), want) {
			t.Errorf("stderr %q lacks %q", errb.String(), want)
		}
	}
}
