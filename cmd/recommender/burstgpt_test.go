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

	// --window 25:61 holds the requests at 30 s and 60 s; of the skipped
	// rows, the one at 31 s lies between them (in), the one at 20 s before
	// the request at 30 s, which is in the window: counted in too (to the
	// nearest request), so the note says so rather than "within --window"
	// alone. --window 40:61: only the 31 s row's next request (60 s) is
	// inside, so 1 (one "row"); --window 0:25: the 20 s row's next request
	// (30 s) is outside, so none, and no note.
	for _, c := range []struct{ window, want string }{
		{"25:61", "skipped 2 rows with Request tokens 0 within --window to the nearest request (each counted with the request after it), 2 in the whole file"},
		{"40:61", "skipped 1 row with Request tokens 0 within --window to the nearest request (each counted with the request after it), 2 in the whole file"},
		{"0:25", ""},
	} {
		code, _, stderr := runSimulate(t, "--trace", p, "--policy", "fixed:1", "--window", c.window, "--period", "5s", "-q")
		if code != 0 {
			t.Fatalf("--window %s: exit %d: %s", c.window, code, stderr)
		}
		if c.want == "" && strings.Contains(stderr, "skipped") || c.want != "" && !strings.Contains(stderr, c.want) {
			t.Errorf("--window %s: stderr %q\nwant %q", c.window, stderr, c.want)
		}
	}
	// Under --sort the skips are known only as the file's total.
	code, _, stderr = runSimulate(t, "--trace", p, "--policy", "fixed:1", "--window", "40:61", "--period", "5s", "--sort", "-q")
	if want := "skipped 2 rows with Request tokens 0 in the whole file, the share within --window unknown under --sort"; code != 0 || !strings.Contains(stderr, want) {
		t.Errorf("--sort: exit %d, stderr %q\nwant %q", code, stderr, want)
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
