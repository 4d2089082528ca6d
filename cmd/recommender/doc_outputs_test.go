package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// docOutput is one pasted transcript of README.md or docs/*.md: a fenced
// block whose first line is "$ infscale ARGS", then what the command
// prints (stdout, then stderr). A block whose last line is "..." shows only
// the first lines of the output.
type docOutput struct {
	file       string
	line       int    // 1-based line of the "$ infscale" line
	cmd        string // the command line, without "$ "
	start, end int    // byte offsets of the output (after the $ line, before the closing fence)
	abridged   bool
}

// docOutputs finds the transcripts of the markdown text s of file.
func docOutputs(file, s string) []docOutput {
	var out []docOutput
	off, in, lineNo := 0, false, 0
	var cur *docOutput
	for _, line := range strings.SplitAfter(s, "\n") {
		lineNo++
		bare := strings.TrimRight(line, "\n")
		switch {
		case !in && strings.HasPrefix(bare, "```"):
			in = true
			cur = nil
			if lang := strings.TrimPrefix(bare, "```"); lang == "" || lang == "text" || lang == "console" {
				cur = &docOutput{file: file}
			}
		case in && bare == "```":
			in = false
			if cur != nil && cur.cmd != "" {
				cur.end = off
				body := s[cur.start:cur.end]
				cur.abridged = strings.HasSuffix(body, "\n...\n") || body == "...\n"
				out = append(out, *cur)
			}
			cur = nil
		case in && cur != nil && cur.cmd == "" && strings.HasPrefix(bare, "$ infscale "):
			cur.cmd, cur.line, cur.start = strings.TrimPrefix(bare, "$ "), lineNo, off+len(line)
		case in && cur != nil && cur.cmd == "":
			cur = nil // a block that does not open with a command is not a transcript
		}
		off += len(line)
	}
	return out
}

// docOutputSkip says why a transcript is not re-run here, or "": the
// demos print timings (cmd/recommender/internal/demo's transcript tests own them).
func docOutputSkip(cmd string) string {
	if strings.Contains(cmd, "--demo") {
		return "the demo transcripts are cmd/recommender/internal/demo's (TestDemoTranscript, TestZeroDemoTranscript)"
	}
	return ""
}

// TestDocOutputs re-runs every pasted transcript of README.md,
// docs/*.md and docs/evaluation/*.md ("$ infscale ..." opening a fenced
// block) from the repository root, as written, and wants the block to be
// what the command prints (stdout then stderr; an abridged block, ending
// in "...", its first lines). With -update it rewrites the blocks from the real output. The
// simulated commands are deterministic: the same trace, seed and model
// give the same table on every machine.
func TestDocOutputs(t *testing.T) {
	root := filepath.Join("..", "..")
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	reports, err := filepath.Glob(filepath.Join(root, "docs", "evaluation", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, reports...)
	files = append([]string{filepath.Join(root, "README.md")}, files...)
	type doc struct {
		path, rel, text string
		outs            []docOutput
	}
	var docs []doc
	total := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		d := doc{path: f, rel: filepath.ToSlash(rel), text: string(b)}
		d.outs = docOutputs(d.rel, d.text)
		total += len(d.outs)
		docs = append(docs, d)
	}
	if total < 4 {
		t.Fatalf("found %d transcripts in README.md and docs/*.md, want at least simulate's, tune's, gpu's and config's", total)
	}
	for i := range docs {
		for j := 0; j < len(docs[i].outs); j++ {
			o := docs[i].outs[j]
			if why := docOutputSkip(o.cmd); why != "" {
				continue
			}
			if testing.Short() && strings.HasPrefix(o.cmd, "infscale tune ") {
				t.Logf("%s:%d: %s: skipped in -short mode (a tune replays ~300 policies)", o.file, o.line, o.cmd)
				continue
			}
			got := docRun(t, root, o.cmd)
			want := docs[i].text[o.start:o.end]
			if o.abridged {
				n := strings.Count(want, "\n") - 1
				got = firstLines(got, n) + "...\n"
			}
			if got != want {
				if !*updateReadme {
					t.Errorf("%s:%d: the output of `%s` differs from the doc's block; regenerate: go test ./cmd/recommender -run TestDocOutputs -update\ndoc:\n%s\nreal:\n%s", o.file, o.line, o.cmd, want, got)
					continue
				}
				docs[i].text = docs[i].text[:o.start] + got + docs[i].text[o.end:]
				// The offsets after this block moved: find them again.
				docs[i].outs = docOutputs(docs[i].rel, docs[i].text)
				if err := os.WriteFile(docs[i].path, []byte(docs[i].text), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}

// docRun runs cmd ("infscale ARGS") in dir and returns its stdout then
// its stderr, dir's absolute path cut from the paths it names (kong's path
// flags resolve a file against the working directory; the docs name files
// from the repository root).
func docRun(t *testing.T, dir, cmd string) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Chdir(dir); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := os.Chdir(wd); err != nil {
			t.Fatal(err)
		}
	}()
	args, err := shellWords(cmd)
	if err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
	var out, errb bytes.Buffer
	run(context.Background(), args[1:], strings.NewReader(""), &out, &errb)
	return strings.ReplaceAll(out.String()+errb.String(), abs+string(filepath.Separator), "")
}

// firstLines is the first n lines of s.
func firstLines(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > n {
		lines = lines[:n]
	}
	return strings.Join(lines, "")
}
