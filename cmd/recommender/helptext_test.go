package main

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/infscale/infscale/pkg/modelserver"
	"github.com/infscale/infscale/pkg/tune"
)

// TestHelpPointsToReadingTheOutput: the commands whose output has units,
// reasons and reference rows say in --help where they are explained, and
// that section exists.
func TestHelpPointsToReadingTheOutput(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "README.md"))
	if err != nil || !bytes.Contains(b, []byte("\n## Reading the output\n")) {
		t.Fatalf("docs/README.md lacks the section \"Reading the output\" (%v)", err)
	}
	for cmd, want := range map[string]string{
		"simulate": "oracle reads the trace ahead",
		"backtest": "the fidelity line grades",
		"decide":   "the reason: the step of the pipeline",
		"serve":    "rate is requests per second",
	} {
		var out, errb bytes.Buffer
		run(t.Context(), []string{cmd, "--help"}, strings.NewReader(""), &out, &errb)
		help := strings.Join(strings.Fields(out.String()), " ")
		for _, w := range []string{want, `docs/README.md, "Reading the output"`} {
			if !strings.Contains(help, w) {
				t.Errorf("%s --help lacks %q", cmd, w)
			}
		}
	}
}

// TestQueueTargetStory: load's knee, tune's winner and the chart's default
// queue target each point at the one page that says why they differ.
func TestQueueTargetStory(t *testing.T) {
	const page = "docs/queue-target.md"
	if _, err := os.Stat(filepath.Join("..", "..", page)); err != nil {
		t.Fatal(err)
	}
	values, err := os.ReadFile(filepath.Join("..", "..", "deploy", "chart", "infscale", "values.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for what, text := range map[string]string{"load's knee line": kneeNote, "tune's text output": tune.TargetNote, "the chart's values.yaml": string(values)} {
		if !strings.Contains(text, page) {
			t.Errorf("%s does not point at %s", what, page)
		}
	}
}

// TestHelpNamesEveryServer: a --server flag that detects by default (auto:
// parse, decide, kube) takes every profile modelserver knows, so its help
// names each (epp was accepted but missing from all three).
func TestHelpNamesEveryServer(t *testing.T) {
	var cli CLI
	parser, err := newParser(&cli, &bytes.Buffer{}, &bytes.Buffer{}, func(int) {})
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, node := range parser.Model.Children {
		for _, f := range node.Flags {
			if f.Name != "server" || f.Default != "auto" {
				continue
			}
			n++
			for _, s := range modelserver.Names() {
				if !regexp.MustCompile(`\b` + s + `\b`).MatchString(f.Help) {
					t.Errorf("%s --server: help %q does not name %s", node.Name, f.Help, s)
				}
			}
		}
	}
	if n < 3 {
		t.Errorf("%d commands with --server defaulting to auto, want parse, decide and kube", n)
	}
}
