package demo

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var updateDemo = flag.Bool("update", false, "rewrite docs/serve.md's demo transcript from a full-length (60 s) run of RunDemo")

const (
	demoDoc   = "../../../../docs/serve.md"
	demoBegin = "<!-- BEGIN DEMO OUTPUT: go test ./cmd/recommender/internal/demo -run TestDemoTranscript -update (a 60 s run of serve --demo) -->"
	demoEnd   = "<!-- END DEMO OUTPUT -->"
)

// TestDemoTranscript rewrites docs/serve.md's demo transcript from a real
// 60 s run with -update (what `infscale serve --demo` prints, start to
// end). Without -update it does nothing: TestDemo checks the transcript's
// shape against its own (shorter) run, since the values depend on timing.
func TestDemoTranscript(t *testing.T) {
	rewriteTranscript(t, demoBegin, demoEnd, "$ infscale serve --demo\n", func(out *bytes.Buffer) error {
		_, err := RunDemo(t.Context(), out, DemoOptions{})
		return err
	})
}

// rewriteTranscript, with -update, runs a demo and writes what it printed
// between the markers begin and end of docs/serve.md, after cmd.
func rewriteTranscript(t *testing.T, begin, end, cmd string, run func(*bytes.Buffer) error) {
	t.Helper()
	if !*updateDemo {
		t.Skip("rewrites docs/serve.md with -update")
	}
	var out bytes.Buffer
	if err := run(&out); err != nil {
		t.Fatal(err)
	}
	s, i, j := docBlock(t, begin, end)
	block := begin + "\n```\n" + cmd + out.String() + "```\n"
	if err := os.WriteFile(demoDoc, []byte(s[:i]+block+s[j:]), 0o644); err != nil {
		t.Fatal(err)
	}
}

// demoDocBlock reads docs/serve.md and finds its transcript markers: the
// text, the index of demoBegin and of demoEnd.
func demoDocBlock(t *testing.T) (string, int, int) {
	t.Helper()
	return docBlock(t, demoBegin, demoEnd)
}

// docBlock reads docs/serve.md and finds the markers begin and end: the
// text, the index of begin and of end.
func docBlock(t *testing.T, demoBegin, demoEnd string) (string, int, int) {
	t.Helper()
	doc, err := os.ReadFile(filepath.FromSlash(demoDoc))
	if err != nil {
		t.Fatal(err)
	}
	s := string(doc)
	i, j := strings.Index(s, demoBegin), strings.Index(s, demoEnd)
	if i < 0 || j < i {
		t.Fatalf("%s lacks the markers %q ... %q", demoDoc, demoBegin, demoEnd)
	}
	return s, i, j
}

const (
	zeroBegin = "<!-- BEGIN ZERO DEMO OUTPUT: go test ./cmd/recommender/internal/demo -run TestZeroDemoTranscript -update (a 60 s run of serve --demo-zero) -->"
	zeroEnd   = "<!-- END ZERO DEMO OUTPUT -->"
	zeroCmd   = "$ infscale serve --demo-zero\n"
)

// TestZeroDemoTranscript rewrites docs/serve.md's scale-to-zero transcript
// from a real 60 s run of RunZeroDemo with -update; without it, nothing
// (TestZeroDemo checks the transcript's lines against its own run).
func TestZeroDemoTranscript(t *testing.T) {
	rewriteTranscript(t, zeroBegin, zeroEnd, zeroCmd, func(out *bytes.Buffer) error {
		_, err := RunZeroDemo(t.Context(), out, DemoOptions{})
		return err
	})
}

// checkZeroTranscript compares docs/serve.md's zero-demo transcript with
// a real run's output, numbers aside: the same lines in the same order,
// except serve's decision lines (how many there are depends on timing).
func checkZeroTranscript(t *testing.T, real string) {
	t.Helper()
	s, i, j := docBlock(t, zeroBegin, zeroEnd)
	block := strings.TrimSuffix(strings.TrimPrefix(s[i+len(zeroBegin):j], "\n```\n"+zeroCmd), "```\n")
	frame := func(text string) string {
		var out []string
		for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
			if shape, _ := demoShape(line); !strings.HasPrefix(shape, "#s serve:") {
				out = append(out, shape)
			}
		}
		return strings.Join(out, "\n")
	}
	if got, want := frame(block), frame(real); got != want {
		t.Errorf("%s's zero demo transcript differs from the real output's lines (numbers aside); regenerate: go test ./cmd/recommender/internal/demo -run TestZeroDemoTranscript -update\ndoc:\n%s\nreal:\n%s", demoDoc, got, want)
	}
}

// demoNumber is a number or a duration such as 1m0s, 1.6s or 0.021s.
var demoNumber = regexp.MustCompile(`\d+(?:\.\d+)?(?:m\d+(?:\.\d+)?)?`)

// demoRow is a decision line's shape once its numbers are #.
var demoRow = regexp.MustCompile(`^#s chat # (?:#|-) (?:#|-) (?:#|-) (?:#s|-) (?:#|-) # [A-Za-z-]+(?: \*)?$`)

// demoShape is a transcript line with every number as # and runs of blanks
// as one; rows reads true for a decision line.
func demoShape(line string) (string, bool) {
	s := strings.Join(strings.Fields(demoNumber.ReplaceAllString(line, "#")), " ")
	return s, strings.HasPrefix(s, "#s chat ")
}

// checkDemoTranscript compares docs/serve.md's transcript with a real run's
// output: every line other than the decisions (the preamble, the header,
// the summary and what follows) has the same words in the same order (the
// numbers scale with the run's length), and every decision line of the
// doc has the real rows' shape.
func checkDemoTranscript(t *testing.T, real string) {
	t.Helper()
	s, i, j := demoDocBlock(t)
	block := strings.TrimSuffix(strings.TrimPrefix(s[i+len(demoBegin):j], "\n```\n$ infscale serve --demo\n"), "```\n")
	frame := func(text string, check bool) []string {
		var out []string
		for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
			shape, row := demoShape(line)
			if !row {
				out = append(out, shape)
			} else if check && !demoRow.MatchString(shape) {
				t.Errorf("%s: decision line %q does not have the shape of the real rows", demoDoc, line)
			}
		}
		return out
	}
	for _, line := range strings.Split(real, "\n") {
		if shape, row := demoShape(line); row && !demoRow.MatchString(shape) {
			t.Errorf("real decision line %q does not have the expected shape %s", line, demoRow)
		}
	}
	got, want := frame(block, true), frame(real, false)
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("%s's demo transcript differs from the real output's lines (numbers aside); regenerate: go test ./cmd/recommender/internal/demo -run TestDemoTranscript -update\ndoc:\n%s\nreal:\n%s",
			demoDoc, strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
