package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestSimulateBurstGPT: simulate reads a BurstGPT file detected by its
// header, replays the rows with a prompt, and notes the rows with Request
// tokens 0 it skipped on stderr; a file of nothing but those is refused.
func TestSimulateBurstGPT(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "BurstGPT_1.csv")
	body := "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n" +
		"0,ChatGPT,300,40,340,Conversation log\n" +
		"20,GPT-4,0,0,0,Conversation log\n" +
		"30,ChatGPT,500,0,500,API log\n" +
		"31,ChatGPT,0,0,0,API log\n" +
		"60,GPT-4,120,80,200,Conversation log\n"
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, stderr := runSimulate(t, "--trace", p, "--policy", "fixed:1", "--output", "json", "-q")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// Three requests replayed (0 s, 30 s, 60 s); two rows skipped.
	if !strings.Contains(out, `"requests": 3,`) {
		t.Errorf("want 3 requests replayed:\n%s", out)
	}
	if want := "note: BurstGPT_1.csv: skipped 2 rows with Request tokens 0"; !strings.Contains(stderr, want) {
		t.Errorf("stderr %q\nwant it to contain %q", stderr, want)
	}

	p = filepath.Join(dir, "fails.csv")
	if err := os.WriteFile(p, []byte("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n5,GPT-4,0,0,0,API log\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, stderr = runSimulate(t, "--trace", "burstgpt:"+p, "-q")
	if want := "fails.csv: trace has no requests: all 1 rows have Request tokens 0"; code != exitInvalid || !strings.Contains(stderr, want) {
		t.Errorf("exit %d, stderr %q\nwant exit %d and %q", code, stderr, exitInvalid, want)
	}
}
