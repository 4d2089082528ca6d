package main

import (
	"bytes"
	"context"
	"flag"
	"os"
	"path/filepath"
	"regexp"
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

// TestHelpShowsDefaults: every flag of every command with a default
// shows it in --help, either as kong's --flag="value" form (no placeholder)
// or in its help text (a placeholder hides kong's form).
func TestHelpShowsDefaults(t *testing.T) {
	var cli CLI
	parser, err := newParser(&cli, &bytes.Buffer{}, &bytes.Buffer{}, func(int) {})
	if err != nil {
		t.Fatal(err)
	}
	for _, node := range parser.Model.Children {
		if node.Hidden {
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

// commandRow is a row of README.md's command table: the command's name and
// the guides its docs cell links.
var commandRow = regexp.MustCompile("(?m)^\\| \\[`([a-z-]+)`\\]\\(docs/cli/[a-z-]+\\.md\\) \\|.*\\| (.*) \\|$")

// TestFlagsDocumented: every flag `infscale CMD --help` lists is named
// (`--flag`, or its short form `-f`) in CMD's row of README.md's command
// table or in a guide that row links, so a flag never lives in --help
// alone. A flag CMD shares with gpu (the replica flags) may be named in
// docs/replica.md, one it shares with decide (the policy flags kube takes)
// in docs/recommend.md: the guides point there for them.
func TestFlagsDocumented(t *testing.T) {
	root := filepath.Join("..", "..")
	read := func(rel string) string {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	readme := read("README.md")
	guides := map[string]string{}
	for _, m := range commandRow.FindAllStringSubmatch(readme, -1) {
		text := m[0]
		for _, l := range mdLink.FindAllStringSubmatch(m[2], -1) {
			path, _, _ := strings.Cut(l[1], "#")
			if strings.HasSuffix(path, ".md") {
				text += read(path)
			}
		}
		guides[m[1]] = text
	}
	named := func(text, flag string) bool {
		return regexp.MustCompile(regexp.QuoteMeta(flag) + `([^a-z0-9-]|$)`).MatchString(text)
	}
	var cli CLI
	parser, err := newParser(&cli, &bytes.Buffer{}, &bytes.Buffer{}, func(int) {})
	if err != nil {
		t.Fatal(err)
	}
	flagsOf := map[string]map[string]bool{}
	for _, node := range parser.Model.Children {
		flagsOf[node.Name] = map[string]bool{}
		for _, f := range node.Flags {
			flagsOf[node.Name][f.Name] = true
		}
	}
	shared := map[string]string{"gpu": read("docs/replica.md"), "decide": read("docs/recommend.md")}
	for _, node := range parser.Model.Children {
		if node.Hidden {
			continue
		}
		text, ok := guides[node.Name]
		if !ok {
			t.Errorf("%s: no row in README.md's command table", node.Name)
			continue
		}
	flags:
		for _, f := range node.Flags {
			if f.Hidden {
				continue
			}
			if named(text, "--"+f.Name) || f.Short != 0 && named(text, "`-"+string(f.Short)) {
				continue
			}
			for cmd, doc := range shared {
				if cmd != node.Name && flagsOf[cmd][f.Name] && named(doc, "--"+f.Name) {
					continue flags
				}
			}
			t.Errorf("%s --%s: named in neither README.md's row of %s nor the guides it links", node.Name, f.Name, node.Name)
		}
	}
}
