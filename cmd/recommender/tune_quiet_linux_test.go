//go:build linux

package main

import (
	"context"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/infscale/infscale/internal/promtest"
)

// openPTY opens a pseudo-terminal pair: the terminal side a command
// writes to (a character device, as a user's terminal is) and the side
// that reads what it wrote.
func openPTY(t *testing.T) (term, reader *os.File) {
	t.Helper()
	m, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminal: %v", err)
	}
	t.Cleanup(func() { m.Close() })
	if err := unix.IoctlSetPointerInt(int(m.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Skipf("unlockpt: %v", err)
	}
	n, err := unix.IoctlGetInt(int(m.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Skipf("ptsname: %v", err)
	}
	s, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("open the terminal side: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s, m
}

// TestTuneQuietOnTerminal: tune on a history with --quiet writes nothing
// on a terminal; the history's queries ("tune: queries 1/13") were
// redrawn there whatever --quiet said. Without it they are, as the
// control. The Prometheus is real and empty: the queries run, and tune
// then fails on no traffic (exit 1), after the progress it would show.
func TestTuneQuietOnTerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus")
	}
	srv := promtest.Start(t, promtest.Options{})
	for _, quiet := range []bool{true, false} {
		term, reader := openPTY(t)
		args := []string{"tune", "--prometheus-url", srv.URL, "--selector", `{namespace="llm"}`, "--start=-1h", "--finalists", "1"}
		if quiet {
			args = append(args, "--quiet")
		}
		var out strings.Builder
		code := run(context.Background(), args, nil, &out, term)
		term.Close()
		// What the command wrote, read back from the other side until
		// nothing more comes.
		reader.SetReadDeadline(time.Now().Add(2 * time.Second))
		b, _ := io.ReadAll(reader)
		got := string(b)
		if code != exitRuntime || !strings.Contains(got, "no request completed") {
			t.Fatalf("quiet %v: exit %d, terminal %q; want exit 1 on no traffic", quiet, code, got)
		}
		if shown := strings.Contains(got, "tune: queries"); shown == quiet {
			t.Errorf("quiet %v: terminal %q; want the queries' progress %v", quiet, got, !quiet)
		}
	}
}
