package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestReasonExamples runs the example of every row of docs/recommend.md's
// Reasons table: its `decide ...` commands in order (a --state file in a
// fresh directory), the last one's reason and desired count must be the
// row's. A reason decide cannot give (pair: a prefill/decode pool's) names
// the command that shows it instead.
func TestReasonExamples(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "recommend.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	i := strings.Index(doc, "\n## Reasons\n")
	if i < 0 {
		t.Fatal("docs/recommend.md has no ## Reasons section")
	}
	section := doc[i+1:]
	if j := strings.Index(section[3:], "\n## "); j >= 0 {
		section = section[:j+3]
	}
	rows := regexp.MustCompile("(?m)^\\| `([^`]+)` \\|.*\\| ([^|]*) \\|$").FindAllStringSubmatch(section, -1)
	if len(rows) < 18 {
		t.Fatalf("found %d rows with an example in the Reasons table, want every reason's", len(rows))
	}
	cmdRe := regexp.MustCompile("`(decide [^`]+)`")
	wantRe := regexp.MustCompile(`→ (\d+)\b`)
	for _, row := range rows {
		reason, cell := row[1], strings.TrimSpace(row[2])
		cmds := cmdRe.FindAllStringSubmatch(cell, -1)
		if reason == "pair" {
			if !strings.Contains(cell, "simulate --pd") {
				t.Errorf("pair: example %q, want the simulate --pd command that shows it", cell)
			}
			continue
		}
		w := wantRe.FindStringSubmatch(cell)
		if len(cmds) == 0 || w == nil {
			t.Errorf("%s: example %q, want `decide ...` commands and → the desired count", reason, cell)
			continue
		}
		want, _ := strconv.Atoi(w[1])
		t.Run(reason, func(t *testing.T) {
			t.Chdir(t.TempDir())
			var out bytes.Buffer
			for k, c := range cmds {
				args, err := shellWords(c[1])
				if err != nil {
					t.Fatalf("%s: %v", c[1], err)
				}
				var errb bytes.Buffer
				out.Reset()
				if k == len(cmds)-1 {
					args = append(args, "-o", "json")
				}
				if code := run(context.Background(), args, strings.NewReader(""), &out, &errb); code != exitOK {
					t.Fatalf("%s: exit %d\n%s%s", c[1], code, out.String(), errb.String())
				}
			}
			var d struct {
				Desired int    `json:"desired"`
				Reason  string `json:"reason"`
			}
			if err := json.Unmarshal(out.Bytes(), &d); err != nil {
				t.Fatalf("%v\n%s", err, out.String())
			}
			if d.Reason != reason || d.Desired != want {
				t.Errorf("%s: desired %d (reason %s), the table says %d (%s)", cell, d.Desired, d.Reason, want, reason)
			}
		})
	}
}
