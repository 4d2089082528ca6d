package config

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestDocConfigsLoad: every ```yaml block of README.md and docs/*.md (an
// indented one in a list item too) with
// a top-level `targets:` key is a whole serve configuration a reader can
// copy, and Parse accepts it (but for the files it names, the reader's). docs/chart.md's
// blocks are Helm values (their `targets:` is the chart's), not configs.
// docs/config.md's main example once had scrape: beside prometheus.url and
// a zero: block at minReplicaCount 1, both refused.
func TestDocConfigsLoad(t *testing.T) {
	root := filepath.Join("..", "..")
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, filepath.Join(root, "README.md"))
	topTargets := regexp.MustCompile(`(?m)^targets:`)
	n := 0
	for _, f := range files {
		if filepath.Base(f) == "chart.md" {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		var block []string
		in, start, indent := false, 0, ""
		for i, line := range strings.Split(string(b), "\n") {
			// A fence may be indented (a block in a list item): its
			// lines are read without that indent.
			fence := strings.HasPrefix(strings.TrimLeft(line, " "), "```")
			switch {
			case !in && fence:
				indent = line[:len(line)-len(strings.TrimLeft(line, " "))]
				in, start, block = true, i+1, block[:0]
				if strings.TrimPrefix(line, indent+"```") != "yaml" {
					start = 0 // not a YAML block: skipped
				}
			case in && fence:
				in = false
				text := strings.Join(block, "\n") + "\n"
				if start == 0 || !topTargets.MatchString(text) {
					continue
				}
				n++
				// Blank lines before the block: positions are the page's.
				_, err := Parse([]byte(strings.Repeat("\n", start)+text), rel)
				var es Errors
				if errors.As(err, &es) {
					kept := es[:0]
					for _, e := range es { // the reader's own files (calibration, model_config)
						if !strings.Contains(e.Msg, ": no such file; ") {
							kept = append(kept, e)
						}
					}
					if err = nil; len(kept) > 0 {
						err = kept
					}
				}
				if err != nil {
					t.Errorf("the configuration block at %s:%d does not load:\n%v", rel, start, err)
				}
			case in:
				block = append(block, strings.TrimPrefix(line, indent))
			}
		}
	}
	if n < 5 {
		t.Errorf("%d configuration blocks found, want the docs' (at least 5)", n)
	}
}
