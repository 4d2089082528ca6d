//go:build unix

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// mkfifo makes a named pipe nobody writes to: a read of it would block for
// ever.
func mkfifo(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	return p
}

// runQuick runs the CLI with args and fails the test when it takes more
// than a few seconds (a blocking read hangs for ever).
func runQuick(t *testing.T, ctx context.Context, stdin *os.File, args ...string) (int, string) {
	t.Helper()
	var out, errs bytes.Buffer
	done := make(chan int, 1)
	go func() {
		if stdin == nil {
			done <- run(ctx, args, strings.NewReader(""), &out, &errs)
			return
		}
		done <- run(ctx, args, stdin, &out, &errs)
	}()
	select {
	case code := <-done:
		return code, errs.String()
	case <-time.After(5 * time.Second):
		t.Fatalf("%v: still running after 5 s", args)
		return 0, ""
	}
}

// Issue 13 item 7: every file the tool reads is a regular file of bounded
// size, refused at once otherwise (exit 2 naming the file): --behavior
// /dev/zero and a 100 MB behavior file ran out of memory; a FIFO as
// --behavior, --trace, or a page of parse and decide hung.
func TestFilesBoundedAndRegular(t *testing.T) {
	fifo := mkfifo(t)
	big := filepath.Join(t.TempDir(), "big.yaml")
	if err := os.WriteFile(big, bytes.Repeat([]byte("#"), 100<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"decide", "--queue", "1", "--behavior", "/dev/zero"}, "/dev/zero: not a regular file (a device)"},
		{[]string{"decide", "--queue", "1", "--behavior", big}, "larger than the 1048576 allowed for a behavior file"},
		{[]string{"decide", "--queue", "1", "--behavior", fifo}, "not a regular file (a named pipe)"},
		{[]string{"simulate", "--trace", fifo}, "not a regular file"},
		{[]string{"parse", fifo}, "not a regular file (a named pipe)"},
		{[]string{"decide", fifo}, "not a regular file (a named pipe)"},
		{[]string{"decide", "--queue", "1", "--state", fifo}, "not a regular file"},
	} {
		code, errs := runQuick(t, t.Context(), nil, tc.args...)
		if code != exitInvalid || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, errs, tc.want)
		}
	}
}

// Issue 13 item 8: the first signal ends a command blocked on a read
// within a second: `parse -` and `decide -` reading a pipe nobody writes
// to return when ctx (cancelled by the first SIGTERM/SIGINT in main) is
// done.
func TestSignalEndsBlockedRead(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	for _, args := range [][]string{{"parse", "-"}, {"decide", "-"}} {
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(200*time.Millisecond, cancel)
		start := time.Now()
		code, errs := runQuick(t, ctx, r, args...)
		if d := time.Since(start); d > time.Second || code == 0 {
			t.Errorf("%v: exit %d after %v (%q), want a failure within a second of the signal", args, code, d, errs)
		}
	}
}

// The model's config.json (--model-config of gpu, simulate, fleet,
// accuracy) and accuracy's CSV tables are bounded regular files too:
// --model-config /dev/zero and --ground-truth /dev/zero ran out of memory
// (the kernel killed gpu at 24 GB), a FIFO hung past SIGINT.
func TestModelConfigAndTablesBounded(t *testing.T) {
	fifo := mkfifo(t)
	big := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(big, bytes.Repeat([]byte(" "), 5<<20), 0o644); err != nil {
		t.Fatal(err)
	}
	gt := filepath.Join(t.TempDir(), "gt.csv")
	row := "experiment,model,hardware,tp,stage_index,stage_rate_rps,stage_duration_s,question_len,output_len_spec,actual_ttft_mean_ms\ne,m,H100,1,0,1,600,100,10,5\n"
	if err := os.WriteFile(gt, []byte(row), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"gpu", "--model-config", "/dev/zero"}, "--model-config: /dev/zero: not a regular file (a device); want a Hugging Face config.json"},
		{[]string{"gpu", "--model-config", fifo}, "not a regular file (a named pipe)"},
		{[]string{"gpu", "--model-config", big}, "5242880 bytes, larger than the 4194304 allowed for a model's config.json"},
		{[]string{"simulate", "-q", "--model-config", fifo}, "--model-config: " + fifo + ": not a regular file (a named pipe)"},
		{[]string{"accuracy", "--ground-truth", "/dev/zero"}, "--ground-truth: /dev/zero: not a regular file (a device); want a CSV file"},
		{[]string{"accuracy", "--ground-truth", fifo}, "--ground-truth: " + fifo + ": not a regular file (a named pipe)"},
		{[]string{"accuracy", "--ground-truth", gt, "--peers", fifo}, "--peers: " + fifo + ": not a regular file (a named pipe)"},
		{[]string{"accuracy", "--ground-truth", gt, "--peers", "/dev/zero"}, "--peers: /dev/zero: not a regular file (a device)"},
	} {
		code, errs := runQuick(t, t.Context(), nil, tc.args...)
		if code != exitInvalid || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and %q", tc.args, code, errs, tc.want)
		}
	}
}
