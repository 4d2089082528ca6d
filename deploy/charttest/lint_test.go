package charttest

import (
	"bytes"
	"fmt"
	"log"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
)

// docValues returns the values files docs/chart.md shows, its ```yaml
// blocks (the one in a list item unindented), keyed by file:line.
func docValues(t *testing.T) map[string]string {
	t.Helper()
	doc, err := os.ReadFile("../../docs/chart.md")
	if err != nil {
		t.Fatal(err)
	}
	blocks := map[string]string{}
	re := regexp.MustCompile("(?ms)^( *)```yaml\n(.*?)^ *```")
	for _, m := range re.FindAllSubmatchIndex(doc, -1) {
		if bytes.HasPrefix(doc[m[4]:m[5]], []byte("extraScrapeConfigs:")) {
			continue // the Prometheus Helm chart's values: TestOwnScrapeJob
		}
		indent := string(doc[m[2]:m[3]])
		var b strings.Builder
		for _, l := range strings.SplitAfter(string(doc[m[4]:m[5]]), "\n") {
			b.WriteString(strings.TrimPrefix(l, indent))
		}
		blocks[fmt.Sprintf("docs/chart.md:%d", 1+bytes.Count(doc[:m[0]], []byte("\n")))] = b.String()
	}
	return blocks
}

// helmLint is `helm lint --strict --namespace infscale -f values` on the
// chart: Helm's linters (Chart.yaml, values and its schema, every
// template rendered and parsed, object names, deprecated APIs), an error
// for each message of warning severity or above. Templates render in
// Helm's lint mode, where a `fail` is logged ("[INFO] Fail: ...") rather
// than returned: those lines are returned apart.
func helmLint(t *testing.T, values string) (problems, fails []string) {
	t.Helper()
	vals, err := chartutil.ReadValues([]byte(values))
	if err != nil {
		t.Fatal(err)
	}
	var logged bytes.Buffer
	out, flags := log.Writer(), log.Flags()
	log.SetOutput(&logged)
	log.SetFlags(0)
	res := lint.AllWithKubeVersionAndSchemaValidation(chartDir, vals, "infscale", nil, false)
	log.SetOutput(out)
	log.SetFlags(flags)
	for _, m := range res.Messages {
		if m.Severity >= support.WarningSev {
			problems = append(problems, m.Error())
		}
	}
	for _, l := range strings.Split(logged.String(), "\n") {
		if strings.Contains(l, "Fail: ") {
			fails = append(fails, l)
		}
	}
	return problems, fails
}

// TestHelmLint: the chart passes `helm lint --strict` (Helm's own linter,
// helm.sh/helm/v3/pkg/lint) with its defaults and with each values file
// docs/chart.md shows, with no warning or error, and no template fails
// while lint renders it. Helm's lint merges the values given over the
// chart's twice (chartutil.CoalesceValues, then ToRenderValues), so a null
// that deletes a default (`prometheus: {url: null}`, embedded mode) is
// lost and the default comes back: lint renders such a file in
// Prometheus mode, where the chart refuses an inferencePoolRef. Those
// files are rendered as install does (tryRender) instead, which must pass.
func TestHelmLint(t *testing.T) {
	cases := docValues(t)
	if len(cases) < 4 {
		t.Fatalf("docs/chart.md shows %d values files, want its 4 at least", len(cases))
	}
	cases["values.yaml (the defaults)"] = ""
	for name, v := range cases {
		problems, fails := helmLint(t, v)
		for _, p := range problems {
			t.Errorf("%s: helm lint --strict: %s", name, p)
		}
		if len(fails) > 0 && !strings.Contains(v, "null") {
			t.Errorf("%s: a template fails under helm lint:\n%s", name, strings.Join(fails, "\n"))
		}
		if _, err := tryRender(v); err != nil {
			t.Errorf("%s: %v", name, err)
		}
	}
	// The check sees what it should: a values file the schema refuses
	// is lint's error too.
	if problems, _ := helmLint(t, "replicas: \"2\"\n"); !slices.ContainsFunc(problems, func(p string) bool {
		return strings.Contains(p, "at '/replicas': got string, want integer")
	}) {
		t.Errorf("helm lint of replicas: \"2\": %q, want the schema's error", problems)
	}
	// and a value the templates refuse is seen (lint itself passes it).
	if problems, fails := helmLint(t, "rbac: {modes: [write]}\n"); len(problems) > 0 || len(fails) == 0 || !strings.Contains(fails[0], `rbac.modes: "write" is not a mode`) {
		t.Errorf("helm lint of rbac.modes [write]: problems %q, fails %q; want none, and the template's refusal", problems, fails)
	}
}

// TestHelmPackage: `helm package deploy/chart/infscale` (chartutil.Save,
// as action.Package calls it) writes infscale-<version>.tgz, which loads
// back with every file of the directory (the templates, values.schema.json,
// rules/ and timezones.txt, which templates read with .Files) and renders
// as the directory does: the defaults, the PrometheusRule (rules/) and a
// tune CronJob whose timeZone is checked against timezones.txt.
func TestHelmPackage(t *testing.T) {
	dir, err := loader.LoadDir(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	tgz, err := chartutil.Save(dir, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := filepath.Base(tgz), "infscale-"+dir.Metadata.Version+".tgz"; got != want {
		t.Errorf("helm package wrote %s, want %s", got, want)
	}
	pkg, err := loader.Load(tgz)
	if err != nil {
		t.Fatalf("the package does not load back: %v", err)
	}
	var got, want []string
	for _, f := range pkg.Raw {
		got = append(got, f.Name)
	}
	for _, f := range dir.Raw {
		want = append(want, f.Name)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("the package holds %q, the directory %q", got, want)
	}
	for _, f := range []string{"Chart.yaml", "values.yaml", "values.schema.json", "timezones.txt", "rules/infscale.alerts.yml", "rules/infscale.rules.yml", "templates/NOTES.txt", "templates/_helpers.tpl"} {
		if !slices.Contains(got, f) {
			t.Errorf("the package lacks %s", f)
		}
	}
	for _, values := range []string{
		"",
		"prometheusRule: {enabled: true}\ntune: {enabled: true, results: {claimName: tune-results}, timeZone: Europe/Berlin}\n" + tunedTarget,
	} {
		a, b := renderFiles(t, dir, values), renderFiles(t, pkg, values)
		if len(a) == 0 || !maps.Equal(a, b) {
			t.Errorf("values %q: the package renders %d files, the directory %d, not the same", values, len(b), len(a))
		}
		if values != "" && !strings.Contains(b["infscale/templates/prometheusrule.yaml"], "InfscaleDown") {
			t.Errorf("the package's PrometheusRule has no rules/ alert InfscaleDown:\n%s", b["infscale/templates/prometheusrule.yaml"])
		}
	}
}

// renderFiles is engine.Render of ch with values over its defaults, as
// `helm template infscale -n infscale` renders it.
func renderFiles(t *testing.T, ch *chart.Chart, values string) map[string]string {
	t.Helper()
	over, err := chartutil.ReadValues([]byte(values))
	if err != nil {
		t.Fatal(err)
	}
	rv, err := chartutil.ToRenderValues(ch, over, chartutil.ReleaseOptions{Name: "infscale", Namespace: "infscale", Revision: 1, IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, rv)
	if err != nil {
		t.Fatal(err)
	}
	return files
}
