package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var updateReadme = flag.Bool("update", false, "rewrite README.md's generated command reference from the current --help output")

const (
	helpBegin = "<!-- BEGIN GENERATED HELP: go test ./cmd/recommender -run TestReadmeHelp -update -->"
	helpEnd   = "<!-- END GENERATED HELP -->"
)

// TestReadmeHelp keeps README.md's command reference true: the block between
// the markers is exactly what `infscale COMMAND --help` prints for every
// subcommand. Run with -update to regenerate it after changing a flag.
func TestReadmeHelp(t *testing.T) {
	var cli CLI
	parser, err := newParser(&cli, &bytes.Buffer{}, &bytes.Buffer{}, func(int) {})
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(helpBegin + "\n")
	for _, node := range parser.Model.Children {
		var out, errb bytes.Buffer
		if code := run(context.Background(), []string{node.Name, "--help"}, strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("%s --help: exit %d: %s", node.Name, code, errb.String())
		}
		b.WriteString("\n### `infscale " + node.Name + "`\n\n```\n")
		b.WriteString(strings.TrimRight(out.String(), "\n") + "\n```\n")
	}
	b.WriteString(helpEnd)
	want := b.String()

	path := filepath.Join("..", "..", "README.md")
	readme, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	s := string(readme)
	i, j := strings.Index(s, helpBegin), strings.Index(s, helpEnd)
	if i < 0 || j < i {
		t.Fatalf("README.md lacks the generated help markers %q ... %q", helpBegin, helpEnd)
	}
	got := s[i : j+len(helpEnd)]
	if got == want {
		return
	}
	if *updateReadme {
		if err := os.WriteFile(path, []byte(s[:i]+want+s[j+len(helpEnd):]), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	t.Errorf("README.md's command reference is out of date with --help; run: go test ./cmd/recommender -run TestReadmeHelp -update")
}

// TestHelpShowsDefaults: every flag of backtest and profile with a default
// shows it in --help, either as kong's --flag="value" form (no placeholder)
// or in its help text (a placeholder hides kong's form).
func TestHelpShowsDefaults(t *testing.T) {
	var cli CLI
	parser, err := newParser(&cli, &bytes.Buffer{}, &bytes.Buffer{}, func(int) {})
	if err != nil {
		t.Fatal(err)
	}
	for _, node := range parser.Model.Children {
		if node.Name != "backtest" && node.Name != "profile" {
			continue
		}
		for _, f := range node.Flags {
			if f.Default == "" || f.IsBool() || f.PlaceHolder == "" {
				continue
			}
			if !strings.Contains(f.Help, "default "+f.Default) {
				t.Errorf("%s --%s: help %q does not say its default %s", node.Name, f.Name, f.Help, f.Default)
			}
		}
	}
}
