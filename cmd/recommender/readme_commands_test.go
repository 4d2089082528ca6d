package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestReadmeCommands runs every `bin/infscale ...` line of README.md's sh
// blocks from the repository root, as a reader would paste it, and wants
// exit 0: the files they name are shipped (examples/), the flags exist.
// Lines that need a server the reader runs (an http:// URL) or the tools
// `make tools` builds (tools/bin/) are only parsed, not run (the history
// command's own test runs it with the pinned promtool).
func TestReadmeCommands(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Join("..", ".."))
	cmds := readmeCommands(string(readme))
	if len(cmds) < 5 {
		t.Fatalf("found %d bin/infscale commands in README.md's sh blocks, want the quickstart's (at least 5)", len(cmds))
	}
	remote := regexp.MustCompile(`https?://|tools/bin/`)
	for _, line := range cmds {
		args, err := shellWords(line)
		if err != nil {
			t.Errorf("%s: %v", line, err)
			continue
		}
		args = args[1:]
		if remote.MatchString(line) {
			var cli CLI
			parser, err := newParser(&cli, &bytes.Buffer{}, &bytes.Buffer{}, func(int) {})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := parser.Parse(args); err != nil {
				t.Errorf("%s: does not parse: %v", line, err)
			}
			continue
		}
		var out, errb bytes.Buffer
		if code := run(context.Background(), args, strings.NewReader(""), &out, &errb); code != exitOK {
			t.Errorf("%s: exit %d\nstdout:\n%s\nstderr:\n%s", line, code, out.String(), errb.String())
		}
	}
}

// readmeCommands returns the bin/infscale lines of the ```sh blocks of s,
// their trailing comments removed.
func readmeCommands(s string) []string {
	var out []string
	in := false
	for _, line := range strings.Split(s, "\n") {
		switch {
		case strings.HasPrefix(line, "```sh"):
			in = true
		case strings.HasPrefix(line, "```"):
			in = false
		case in && strings.HasPrefix(line, "bin/infscale "):
			out = append(out, strings.TrimSpace(stripComment(line)))
		}
	}
	return out
}

// stripComment cuts a shell comment (# after a blank, outside quotes).
func stripComment(line string) string {
	var quote rune
	for i, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '\'' || r == '"':
			quote = r
		case r == '#' && i > 0 && (line[i-1] == ' ' || line[i-1] == '\t'):
			return line[:i]
		}
	}
	return line
}

// shellWords splits a command line as sh does for the quoting README uses:
// blanks separate words, '...' and "..." quote (no escapes), and an
// unquoted word with a * is a glob, replaced by the files it matches (a
// pattern that matches nothing is an error).
func shellWords(line string) ([]string, error) {
	var words []string
	var w strings.Builder
	inWord, glob := false, false
	var quote rune
	end := func() error {
		if !inWord {
			return nil
		}
		word := w.String()
		w.Reset()
		inWord = false
		if !glob {
			words = append(words, word)
			return nil
		}
		glob = false
		m, err := filepath.Glob(word)
		if err != nil || len(m) == 0 {
			return fmt.Errorf("%s matches no file (%v)", word, err)
		}
		words = append(words, m...)
		return nil
	}
	for _, r := range line {
		switch {
		case quote != 0:
			if r == quote {
				quote = 0
			} else {
				w.WriteRune(r)
			}
		case r == '\'' || r == '"':
			quote, inWord = r, true
		case r == ' ' || r == '\t':
			if err := end(); err != nil {
				return nil, err
			}
		default:
			glob = glob || r == '*'
			w.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, errors.New("unclosed quote")
	}
	if err := end(); err != nil {
		return nil, err
	}
	return words, nil
}
