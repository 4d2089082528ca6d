package main

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// mdLink is a markdown inline link's target: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// githubAnchor is the id GitHub gives a heading: lower case, punctuation
// other than '-' and '_' removed, blanks turned into '-'.
func githubAnchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// mdAnchors is the set of heading anchors of the markdown text s (code
// blocks skipped).
func mdAnchors(s string) map[string]bool {
	out := map[string]bool{}
	in := false
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, "```") {
			in = !in
			continue
		}
		if !in && strings.HasPrefix(line, "#") {
			out[githubAnchor(strings.TrimLeft(line, "#"))] = true
		}
	}
	return out
}

// markdownFiles is README.md and docs/**/*.md under root.
func markdownFiles(t *testing.T, root string) []string {
	t.Helper()
	files := []string{filepath.Join(root, "README.md")}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".md") {
			files = append(files, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// TestDocLinks: every relative link of README.md and docs/**/*.md names a
// file or directory of the repository (none outside it), and a #fragment into a markdown
// file names one of its headings, so moving a page (docs/evaluation/)
// cannot leave a dead link behind.
func TestDocLinks(t *testing.T) {
	root := filepath.Join("..", "..")
	files := markdownFiles(t, root)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		in := false
		for i, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(line, "```") {
				in = !in
			}
			if in {
				continue
			}
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, frag, _ := strings.Cut(target, "#")
				dest := f
				if path != "" {
					dest = filepath.Join(filepath.Dir(f), filepath.FromSlash(path))
					if r, err := filepath.Rel(root, dest); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
						t.Errorf("%s:%d: link %s: outside the repository (a clone has only the repository)", rel, i+1, target)
						continue
					}
					if _, err := os.Stat(dest); err != nil {
						t.Errorf("%s:%d: link %s: no such file", rel, i+1, target)
						continue
					}
				}
				if frag == "" || !strings.HasSuffix(dest, ".md") {
					continue
				}
				db, err := os.ReadFile(dest)
				if err != nil {
					t.Fatal(err)
				}
				if !mdAnchors(string(db))[frag] {
					t.Errorf("%s:%d: link %s: no heading with that anchor", rel, i+1, target)
				}
			}
		}
	}
}

// TestDocFencesClosed: every fenced code block of README.md and
// docs/**/*.md is closed, so no prose after a stray fence renders as code
// (docs/recommend.md's last paragraph once did).
func TestDocFencesClosed(t *testing.T) {
	root := filepath.Join("..", "..")
	files := markdownFiles(t, root)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, f)
		open := 0 // line of the open fence, 0 outside a block
		for i, line := range strings.Split(string(b), "\n") {
			fence := strings.HasPrefix(strings.TrimLeft(line, " "), "```")
			switch {
			case fence && open == 0:
				open = i + 1
			case fence && strings.TrimSpace(line) != "```":
				t.Errorf("%s:%d: fence %q inside the block opened at line %d: close that block first", rel, i+1, strings.TrimSpace(line), open)
			case fence:
				open = 0
			}
		}
		if open != 0 {
			t.Errorf("%s:%d: fenced block never closed: the rest of the page renders as code", rel, open)
		}
	}
}
