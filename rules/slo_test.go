package rules

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
)

// ttftBucket is vLLM's TTFT histogram; the SLO rules count its le bucket.
const ttftBucket = "vllm:time_to_first_token_seconds_bucket"

// TestTTFTSLOSetOnce: the shipped TTFT SLO is one number. The ratio rules'
// le bucket sets it (it must be a boundary of vLLM's buckets: 2.5 is, 2 is
// not); the alerts' descriptions, the dashboard's slo variable and its
// error-ratio panel, and the shipped config's ttft target all say the same.
func TestTTFTSLOSetOnce(t *testing.T) {
	les := map[string]bool{}
	for _, g := range LoadGroups(t, ruleFiles(t)...) {
		for _, r := range g.Rules {
			expr, err := parser.NewParser(parser.Options{}).ParseExpr(r.Expr)
			if err != nil {
				t.Fatalf("%s: %v", r.Record+r.Alert, err)
			}
			parser.Inspect(expr, func(n parser.Node, _ []parser.Node) error {
				if vs, ok := n.(*parser.VectorSelector); ok && vs.Name == ttftBucket {
					for _, m := range vs.LabelMatchers {
						if m.Name == "le" {
							les[m.Value] = true
						}
					}
				}
				return nil
			})
		}
	}
	if len(les) != 1 {
		t.Fatalf("the rules count %s at le %v, want exactly one bucket", ttftBucket, les)
	}
	var slo string
	for le := range les {
		slo = le
	}
	sec, err := strconv.ParseFloat(slo, 64)
	if err != nil {
		t.Fatalf("le=%q: %v", slo, err)
	}

	for _, g := range LoadGroups(t, ruleFiles(t)...) {
		for _, r := range g.Rules {
			if strings.Contains(r.Alert, "TTFTSLO") && !strings.Contains(r.Annotations["description"], "more than "+slo+" s") {
				t.Errorf("%s description %q does not say the SLO %s s", r.Alert, r.Annotations["description"], slo)
			}
		}
	}

	b, err := os.ReadFile(filepath.Join("..", "dashboards", "infscale.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Templating struct {
			List []struct {
				Name    string          `json:"name"`
				Query   json.RawMessage `json:"query"`
				Current struct {
					Value json.RawMessage `json:"value"`
				} `json:"current"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			Title       string `json:"title"`
			Description string `json:"description"`
			FieldConfig struct {
				Defaults struct {
					Thresholds struct {
						Steps []struct {
							Color string   `json:"color"`
							Value *float64 `json:"value"`
						} `json:"steps"`
					} `json:"thresholds"`
				} `json:"defaults"`
			} `json:"fieldConfig"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, v := range dash.Templating.List {
		if v.Name == "slo" {
			found = true
			if string(v.Query) != strconv.Quote(slo) || string(v.Current.Value) != strconv.Quote(slo) {
				t.Errorf("dashboard variable slo = %s (current %s), want the rules' %s", v.Query, v.Current.Value, slo)
			}
		}
	}
	if !found {
		t.Error("dashboard has no slo variable")
	}
	panels := 0
	for _, p := range dash.Panels {
		if p.Title == "TTFT SLO error ratio" {
			panels++
			if !strings.Contains(p.Description, "after "+slo+" s") {
				t.Errorf("panel %q: description %q does not say the SLO %s s", p.Title, p.Description, slo)
			}
		}
		// The TTFT panel's red band is the SLO (its description says so):
		// it began at 2 s, half a second under the 2.5 s SLO.
		if p.Title == "TTFT p95 vs SLO" {
			panels++
			steps := p.FieldConfig.Defaults.Thresholds.Steps
			if n := len(steps); n == 0 || steps[n-1].Color != "red" || steps[n-1].Value == nil || *steps[n-1].Value != sec {
				t.Errorf("panel %q: thresholds %+v, want the red band from the SLO %s s", p.Title, steps, slo)
			}
		}
	}
	if panels != 2 {
		t.Errorf("found %d of the panels TTFT SLO error ratio and TTFT p95 vs SLO, want both", panels)
	}

	cm, err := os.ReadFile(filepath.Join("..", "deploy", "base", "configmap.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	targets := regexp.MustCompile(`type: ttft\b[^}]*\btarget: ([0-9.]+[a-z]*)`).FindAllStringSubmatch(string(cm), -1)
	if len(targets) == 0 {
		t.Fatal("deploy/base/configmap.yaml has no ttft metric")
	}
	for _, m := range targets {
		d, err := time.ParseDuration(m[1])
		if err != nil || d.Seconds() != sec {
			t.Errorf("deploy/base/configmap.yaml: ttft target %s, want the SLO %s s (%v)", m[1], slo, err)
		}
	}
}
