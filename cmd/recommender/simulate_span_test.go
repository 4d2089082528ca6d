package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimulateSpanHeader: the header says the trace's span as it is. Two
// requests arriving at 0 and 1.5 s span 1.5 s; the header said "over 2 s"
// (%.0f). The reference trace's 1500 s stays "1500 s".
func TestSimulateSpanHeader(t *testing.T) {
	tr := filepath.Join(t.TempDir(), "short.csv")
	if err := os.WriteFile(tr, []byte("0,100,10\n1.5,100,10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"simulate", "--trace", tr, "-p", "fixed:1", "-q"}, nil, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if want := "trace short.csv: 2 requests over 1.5 s; SLO TTFT 2s, period 15s\n"; !strings.HasPrefix(out.String(), want) {
		t.Errorf("stdout %q\nwant it to start %q", out.String(), want)
	}
	for _, tc := range []struct {
		s    float64
		want string
	}{{1500, "1500"}, {1.5, "1.5"}, {0.25, "0.25"}, {2.0004, "2"}, {2.0006, "2.001"}, {604800, "604800"}} {
		if got := spanText(tc.s); got != tc.want {
			t.Errorf("spanText(%g) = %q, want %q", tc.s, got, tc.want)
		}
	}
}
