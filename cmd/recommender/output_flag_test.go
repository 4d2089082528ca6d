package main

import (
	"bytes"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

// Every command with --output takes it as -o too, and calls the plain
// format text (accuracy called it table, which stays as an alias).
func TestOutputFlagShortAndText(t *testing.T) {
	var cli CLI
	parser, err := newParser(&cli, &bytes.Buffer{}, &bytes.Buffer{}, func(int) {})
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	var walk func(n *kong.Node)
	walk = func(n *kong.Node) {
		for _, f := range n.Flags {
			if f.Name != "output" {
				continue
			}
			seen = append(seen, n.Path())
			if f.Short != 'o' {
				t.Errorf("%s --output: no -o short flag", n.Path())
			}
			if !slices.Contains(f.EnumSlice(), "text") || f.Default != "text" {
				t.Errorf("%s --output: enum %q default %q, want text among them and the default", n.Path(), f.Enum, f.Default)
			}
		}
		for _, c := range n.Children {
			walk(c)
		}
	}
	walk(parser.Model.Node)
	// The ten commands of the new-user pass (more may come).
	for _, cmd := range []string{"accuracy", "backtest", "decide", "gpu", "kube", "load", "parse", "profile", "simulate", "tune"} {
		if !slices.ContainsFunc(seen, func(p string) bool { return strings.HasSuffix(p, cmd) }) {
			t.Errorf("%s: no --output flag found (seen %v)", cmd, seen)
		}
	}

	// parse -o json: the page's running 2 and waiting 10 (the fixture's name).
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"parse", "-o", "json", "testdata/vllm-running2-waiting10.prom"}, strings.NewReader(""), &out, &errb); code != exitOK {
		t.Fatalf("parse -o json: exit %d: %s", code, errb.String())
	}
	var pages []struct{ Running, Waiting float64 }
	if err := json.Unmarshal(out.Bytes(), &pages); err != nil || len(pages) != 1 || pages[0].Running != 2 || pages[0].Waiting != 10 {
		t.Errorf("parse -o json: %v %+v\n%s", err, pages, out.String())
	}

	// decide -o json: queue 10, target 4 from 1 → ceil(10/4) = 3.
	out.Reset()
	if code := run(context.Background(), []string{"decide", "--queue", "10", "-o", "json"}, strings.NewReader(""), &out, &errb); code != exitOK {
		t.Fatalf("decide -o json: exit %d: %s", code, errb.String())
	}
	var d decideJSON
	if err := json.Unmarshal(out.Bytes(), &d); err != nil || d.Desired != 3 {
		t.Errorf("decide -o json: %v, desired %d, want 3", err, d.Desired)
	}

	// accuracy -o text is the table (the header row), as -o table and the default.
	var texts []string
	for _, o := range [][]string{{"-o", "text"}, {"-o", "table"}, nil} {
		_, got, errs := runAccuracy(t, append([]string{"--ground-truth", "testdata/accuracy-two-stages.csv"}, o...)...)
		if !strings.Contains(got, "experiment  stage     metric  predicted ms  measured ms  error %") {
			t.Errorf("accuracy %v: no table header in\n%s%s", o, got, errs)
		}
		texts = append(texts, got)
	}
	if texts[0] != texts[1] || texts[0] != texts[2] {
		t.Errorf("accuracy -o text, -o table and the default differ:\n%s\n%s\n%s", texts[0], texts[1], texts[2])
	}
}
