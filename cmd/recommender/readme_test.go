package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

var updateReadme = flag.Bool("update", false, "rewrite the generated docs (docs/cli/*.md from --help, the transcripts of TestDocOutputs) from the current output")

// cliDir is the CLI reference's directory, from this package.
var cliDir = filepath.Join("..", "..", "docs", "cli")

// cliPage is the page docs/cli/NAME.md holds for a command whose
// `infscale NAME --help` prints help.
func cliPage(name, help string) string {
	return "# `infscale " + name + "`\n\n" +
		"<!-- Generated from `infscale " + name + " --help`: go test ./cmd/recommender -run TestCLIReference -update -->\n\n" +
		"```text\n" + strings.TrimRight(help, "\n") + "\n```\n"
}

// TestCLIReference keeps docs/cli/ true: one file per subcommand,
// docs/cli/NAME.md, holding exactly what `infscale NAME --help` prints,
// and docs/cli/README.md listing them; no other file. It fails when a page
// is stale, missing or left over; -update rewrites the directory.
func TestCLIReference(t *testing.T) {
	var cli CLI
	parser, err := newParser(&cli, &bytes.Buffer{}, &bytes.Buffer{}, func(int) {})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	var index strings.Builder
	index.WriteString("# Command reference\n\n" +
		"<!-- Generated: go test ./cmd/recommender -run TestCLIReference -update -->\n\n" +
		"Every command and flag as `infscale COMMAND --help` prints it, one page per command; a test\n" +
		"fails when a page differs from the binary's help. What each command is for: [the README](../../README.md#commands).\n\n")
	for _, node := range parser.Model.Children {
		if node.Hidden { // an old name kept for a release (history)
			continue
		}
		var out, errb bytes.Buffer
		if code := run(context.Background(), []string{node.Name, "--help"}, strings.NewReader(""), &out, &errb); code != 0 {
			t.Fatalf("%s --help: exit %d: %s", node.Name, code, errb.String())
		}
		want[node.Name+".md"] = cliPage(node.Name, out.String())
		index.WriteString("- [`infscale " + node.Name + "`](" + node.Name + ".md)\n")
	}
	want["README.md"] = index.String()

	entries, err := os.ReadDir(cliDir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var stale []string
	for _, e := range entries {
		if _, ok := want[e.Name()]; !ok {
			stale = append(stale, e.Name()+" (no such command)")
			if *updateReadme {
				if err := os.Remove(filepath.Join(cliDir, e.Name())); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	names := make([]string, 0, len(want))
	for name := range want {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		path := filepath.Join(cliDir, name)
		got, err := os.ReadFile(path)
		if err == nil && string(got) == want[name] {
			continue
		}
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		stale = append(stale, name)
		if *updateReadme {
			if err := os.MkdirAll(cliDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(want[name]), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	if len(stale) > 0 && !*updateReadme {
		t.Errorf("docs/cli/ is out of date with --help (%s); run: go test ./cmd/recommender -run TestCLIReference -update", strings.Join(stale, ", "))
	}
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

// TestReadmeLength keeps README.md a first page (issue 24: under 300
// lines): what infscale is, the quickstart, the command table and
// pointers; the rest belongs in docs/ (indexed by docs/README.md).
func TestReadmeLength(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n >= 300 {
		t.Errorf("README.md has %d lines, want under 300: move the detail into docs/ and link it", n)
	}
}
