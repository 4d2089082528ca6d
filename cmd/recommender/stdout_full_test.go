package main

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/infscale/infscale/pkg/fleet"
)

// fullWriter fails every write, as stdout on /dev/full or a full disk does.
type fullWriter struct{}

func (fullWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// A result that could not be written is a runtime failure (exit 1) naming the
// write error once, whichever command produced it: --version, serve
// --check-config's summary and load's table exited 0 with nothing written,
// --help exited 2 (invalid input).
func TestStdoutWriteFailure(t *testing.T) {
	f, err := fleet.Start(context.Background(), fleet.Config{Replicas: 1, Max: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	cfg := filepath.Join("..", "..", "examples", "serve-prometheus.yaml")
	for _, args := range [][]string{
		{"--version"},
		{"serve", "--check-config", "--config", cfg},
		{"load", f.URL(), "--concurrency", "1", "--requests", "2", "--max-tokens", "4", "--prompt-tokens", "16"},
		{"load", f.URL(), "--concurrency", "1", "--requests", "2", "--max-tokens", "4", "--prompt-tokens", "16", "--output", "json"},
		{"gpu"}, // reported its own write error already: unchanged
		{"gpu", "--help"},
	} {
		var errb bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(""), fullWriter{}, &errb)
		msg := syscall.ENOSPC.Error()
		if code != exitRuntime || strings.Count(errb.String(), msg) != 1 {
			t.Errorf("%v: exit %d, stderr %q; want 1 naming %q once", args, code, errb.String(), msg)
		}
	}
}

// The top-level --help whose text could not be written says so in one line:
// its write error, read as "no command chosen", printed the whole usage
// (48 lines) to stderr before it.
func TestRootHelpWriteFailure(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"-h"}} {
		var errb bytes.Buffer
		code := run(context.Background(), args, strings.NewReader(""), fullWriter{}, &errb)
		want := "infscale: " + syscall.ENOSPC.Error() + "\n"
		if code != exitRuntime || errb.String() != want {
			t.Errorf("%v: exit %d, stderr %q; want 1 and %q", args, code, errb.String(), want)
		}
	}
}
