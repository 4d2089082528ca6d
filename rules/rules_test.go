// Package rules holds infscale's Prometheus recording and alerting rules
// (infscale.rules.yml, infscale.alerts.yml) and their promtool unit tests
// (tests/*.test.yml). The Go test runs the pinned promtool (the tools
// module's, found or built by internal/promtest) so `go test ./...` checks
// and unit-tests the rules.
//
// Two copies are generated from these files, and `make test` fails while
// either's rules differ: deploy/base/prometheusrule.yaml (go -C deploy/test test
// -run TestPrometheusRuleMatchesRules -update) and the Helm chart's
// deploy/chart/infscale/rules/ (go -C deploy/charttest test -run
// TestChartRulesMatchRules -update). Regenerate both after an edit.
package rules

import (
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"

	"github.com/infscale/infscale/internal/promtest"
)

// TestCheckRules runs `promtool check rules` on every rule file: syntax,
// PromQL, duplicate names, and the linter's advice.
func TestCheckRules(t *testing.T) {
	files := ruleFiles(t)
	promtool := promtest.Binary(t, promtest.Promtool)
	out, err := exec.Command(promtool, append([]string{"check", "rules", "--lint=all", "--lint-fatal"}, files...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("promtool check rules: %v\n%s", err, out)
	}
}

// TestUnitTests runs `promtool test rules` on tests/*.test.yml; the expected
// values there are worked out by hand in their comments.
func TestUnitTests(t *testing.T) {
	tests, err := filepath.Glob(filepath.Join("tests", "*.test.yml"))
	if err != nil || len(tests) == 0 {
		t.Fatalf("no promtool unit tests under tests/ (%v)", err)
	}
	promtool := promtest.Binary(t, promtest.Promtool)
	for _, f := range tests {
		t.Run(filepath.Base(f), func(t *testing.T) {
			out, err := exec.Command(promtool, "test", "rules", f).CombinedOutput()
			if err != nil {
				t.Fatalf("promtool test rules %s: %v\n%s", f, err, out)
			}
		})
	}
}

// TestEveryRuleTested asserts each recording rule and alert appears in some
// unit test, so no rule ships that nobody evaluates.
func TestEveryRuleTested(t *testing.T) {
	tested := map[string]bool{}
	tests, _ := filepath.Glob(filepath.Join("tests", "*.test.yml"))
	for _, f := range tests {
		for name := range mentionedNames(t, f) {
			tested[name] = true
		}
	}
	for _, g := range LoadGroups(t, ruleFiles(t)...) {
		for _, r := range g.Rules {
			name := r.Record + r.Alert
			if !tested[name] {
				t.Errorf("%s (group %s) has no promtool unit test", name, g.Name)
			}
		}
	}
}

func ruleFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("*.yml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no rule files (*.yml) in rules/ (%v)", err)
	}
	return files
}

// LoadGroups parses rule files with Prometheus's own rulefmt (strict: unknown
// keys and invalid PromQL are errors).
func LoadGroups(t *testing.T, files ...string) []rulefmt.RuleGroup {
	t.Helper()
	var out []rulefmt.RuleGroup
	for _, f := range files {
		gs, errs := rulefmt.ParseFile(f, false, model.UTF8Validation, parser.NewParser(parser.Options{}), slog.New(slog.DiscardHandler))
		if len(errs) > 0 {
			t.Fatalf("%s: %v", f, errs)
		}
		out = append(out, gs.Groups...)
	}
	return out
}

// mentionedNames returns the recording-rule and alert names a unit test
// file evaluates: every word of its text.
func mentionedNames(t *testing.T, path string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, w := range strings.FieldsFunc(string(b), func(r rune) bool {
		return !(r == '_' || r == ':' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) {
		out[strings.Trim(w, ":")] = true
	}
	return out
}
