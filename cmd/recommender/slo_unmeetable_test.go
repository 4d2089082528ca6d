package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimulateWarnsUnmeetableSLO: an SLO below the TTFT any request has
// alone on an idle replica is missed by every request, and optimal (the
// cheapest schedule with the fewest misses) then runs no replica; simulate
// said nothing of why. The reference replica prefills 24,750 tokens/s with
// no request overhead (`infscale gpu`), so the trace's shortest prompt, 100
// tokens, has its first token 100 / 24750 = 4.04 ms after arriving on an
// idle replica: --slo-ttft 1ms is warned of, on stderr and as a note under
// the table, naming that TTFT and the flags to change; 5ms is not.
func TestSimulateWarnsUnmeetableSLO(t *testing.T) {
	tr := filepath.Join(t.TempDir(), "short.csv")
	if err := os.WriteFile(tr, []byte("0,100,10\n1.5,400,10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	want := "short.csv: no request can meet the SLO TTFT of 0.001s: the least TTFT a request has on an idle replica is 0.00404s (its shortest prompt, 100 tokens, alone); every policy misses every request (optimal, the cheapest schedule with the fewest misses, runs no replica). Raise --slo-ttft above 0.00404s, or replay a faster replica (--gpu, --tp)"
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"simulate", "--trace", tr, "--slo-ttft", "1ms", "-p", "optimal", "-q"}, nil, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if !strings.Contains(errb.String(), "warning: "+want+"\n") {
		t.Errorf("stderr %q\nwant the warning %q", errb.String(), want)
	}
	if !strings.Contains(out.String(), "\nnote: "+want+"\n") {
		t.Errorf("stdout %q\nwant the note %q", out.String(), want)
	}
	out.Reset()
	errb.Reset()
	if code := run(context.Background(), []string{"simulate", "--trace", tr, "--slo-ttft", "5ms", "-p", "optimal", "-q"}, nil, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	if s := out.String() + errb.String(); strings.Contains(s, "no request can meet") {
		t.Errorf("--slo-ttft 5ms, above the 4.04 ms: output %q\nwant no warning", s)
	}
}
