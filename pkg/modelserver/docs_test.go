package modelserver

import (
	"os"
	"strings"
	"testing"
)

// TestDocsListEveryFamily: docs/parse.md's profile table names every family
// and every server the code knows, so the documentation cannot drift.
func TestDocsListEveryFamily(t *testing.T) {
	b, err := os.ReadFile("../../docs/parse.md")
	if err != nil {
		t.Fatalf("docs/parse.md: %v", err)
	}
	doc := string(b)
	for _, s := range Servers() {
		if !strings.Contains(doc, "| `"+s.String()+"` |") {
			t.Errorf("docs/parse.md has no table row for %s", s)
		}
		for _, n := range s.Families().All() {
			if !strings.Contains(doc, "`"+n+"`") {
				t.Errorf("docs/parse.md does not name %s (%s)", n, s)
			}
		}
		for _, p := range s.Families().Prefixes {
			if !strings.Contains(doc, "`"+p+"`") {
				t.Errorf("docs/parse.md does not name prefix %s", p)
			}
		}
	}
}
