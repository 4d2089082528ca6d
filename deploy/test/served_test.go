package deploytest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"

	"sigs.k8s.io/yaml"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/recommend"
	"github.com/infscale/infscale/pkg/serve"
)

// knownSource reads every target as 2 replicas with 12 running and 4
// waiting requests and every other signal unknown: enough for a decision
// (and so an infscale_desired_replicas series) per target and pool.
type knownSource struct{}

func (knownSource) Name() string { return "prometheus" }

func (knownSource) Read(_ context.Context, targets []*config.Target, _ time.Time) []serve.Reading {
	out := make([]serve.Reading, len(targets))
	nan := math.NaN()
	for i := range out {
		out[i] = serve.Reading{CurrentKnown: true, Obs: recommend.Observation{Current: 2, Reporting: 2,
			Running: 12, Waiting: 4, Held: nan, KV: nan, CPU: nan, TTFT: nan}}
	}
	return out
}

// servedDesired runs the real serve loop (pkg/serve.Run) on cfg with
// knownSource, reads its /metrics once every target has decided, and
// returns the label sets of its infscale_desired_replicas series.
func servedDesired(t *testing.T, cfg *config.File) []labels.Labels {
	t.Helper()
	want := 0
	for _, tg := range cfg.Targets {
		if tg.Pair() {
			want += 2
		} else {
			want++
		}
	}
	addr := startServe(t, cfg, knownSource{})
	var got []labels.Labels
	deadline := time.Now().Add(30 * time.Second)
	for {
		got = nil
		resp, err := http.Get("http://" + addr + "/metrics")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			for _, line := range strings.Split(string(b), "\n") {
				if !strings.HasPrefix(line, "infscale_desired_replicas{") {
					continue
				}
				series, _, _ := strings.Cut(line, "} ")
				ms, err := parser.NewParser(parser.Options{}).ParseMetricSelector(series + "}")
				if err != nil {
					t.Fatalf("serve's /metrics line %q: %v", line, err)
				}
				b := labels.NewBuilder(labels.EmptyLabels())
				for _, m := range ms {
					b.Set(m.Name, m.Value)
				}
				got = append(got, b.Labels())
			}
		}
		if len(got) >= want {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve exported %d infscale_desired_replicas series after 30 s, want %d (one per target, two per pair)", len(got), want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// evalMax evaluates q, an aggregation max [by (...)] over vector
// selectors, on the exported series: the groups the outer max returns,
// each as its grouping labels.
func evalMax(t *testing.T, q string, series []labels.Labels) []string {
	t.Helper()
	expr, err := parser.NewParser(parser.Options{}).ParseExpr(q)
	if err != nil {
		t.Fatalf("query %q: %v", q, err)
	}
	agg, ok := expr.(*parser.AggregateExpr)
	if !ok || agg.Op != parser.MAX {
		t.Fatalf("query %q: want max(...) outermost", q)
	}
	vs, ok := agg.Expr.(*parser.VectorSelector)
	if !ok {
		t.Fatalf("query %q: want max over one vector selector", q)
	}
	groups := map[string]bool{}
	for _, s := range series {
		match := true
		for _, m := range vs.LabelMatchers {
			if !m.Matches(s.Get(m.Name)) {
				match = false
			}
		}
		if !match {
			continue
		}
		var key []string
		for _, g := range agg.Grouping {
			key = append(key, g+"="+s.Get(g))
		}
		groups[strings.Join(key, ",")] = true
	}
	var out []string
	for k := range groups {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestConsumersReadWhatServeExports renders every kustomization under
// deploy/, runs serve's loop on the infscale config it ships (deploy/base's
// for deploy/keda and deploy/hpa), and evaluates each consumer on the
// series that serve actually exported: each KEDA ScaledObject's query, and
// each HPA's External metric through the prometheus-adapter rule (its
// seriesQuery, then its metricsQuery with the HPA's selector as label
// matchers). Each must return exactly one series, and it must be its own
// target's (a P/D pool's: its own role's), not merely parse. The series
// carry what serve exports plus the target labels deploy/base's
// ServiceMonitor gives at scrape (baseScrape: no other label Prometheus
// adds may be matched on), beside a second installation's copy of every
// series (otherScrape: the chart in another namespace, with the same
// target names), which no query may read.
func TestConsumersReadWhatServeExports(t *testing.T) {
	n := 0
	for _, b := range bundles(t) {
		if len(b.scaled) == 0 && len(b.hpas) == 0 {
			continue
		}
		var served, ours []labels.Labels
		for _, f := range b.configs {
			served = append(served, servedDesired(t, f)...)
		}
		ours = scraped(served, baseScrape)
		exported := append(append([]labels.Labels(nil), ours...), scraped(served, otherScrape)...)
		for _, so := range b.scaled {
			n++
			for _, tr := range so.Spec.Triggers {
				q := tr.Metadata["query"]
				target := singleSeriesQuery(t, q, []string{"target", "role"})
				role := roleOf(t, q)
				// Which exported series the query's selector must pick: its
				// target's, and of a pair only its role's.
				var own []labels.Labels
				for _, s := range ours {
					if s.Get("target") == target && (role == 0 || s.Get("role") == role.String()) {
						own = append(own, s)
					}
				}
				if len(own) == 0 {
					t.Errorf("%s ScaledObject %s: query %q names target %q role %q, which serve does not export (it exports %v)", b.dir, so.Name, q, target, role, exported)
					continue
				}
				if got := evalMax(t, q, own); len(got) != 1 {
					t.Errorf("%s ScaledObject %s: query %q on its own series returns %d series, want 1", b.dir, so.Name, q, len(got))
				}
				if got := evalMax(t, q, exported); len(got) != 1 {
					t.Errorf("%s ScaledObject %s: query %q on everything serve exports returns %v, want one series", b.dir, so.Name, q, got)
				}
				// The query reads nothing of another target or pool, nor of
				// another installation's target of the same name: with its
				// own series gone it returns nothing.
				var others []labels.Labels
				for _, s := range exported {
					if s.Get("namespace") != baseScrape["namespace"] || !(s.Get("target") == target && (role == 0 || s.Get("role") == role.String())) {
						others = append(others, s)
					}
				}
				if got := evalMax(t, q, others); len(got) != 0 {
					t.Errorf("%s ScaledObject %s: query %q also reads another target's or pool's series, or another installation's", b.dir, so.Name, q)
				}
			}
		}
		for _, h := range b.hpas {
			n++
			m := h.Spec.Metrics[0].External
			sel := m.Metric.Selector.MatchLabels
			adapters := b.adapter
			if len(adapters) == 0 {
				t.Fatalf("%s HPA %s: no prometheus-adapter rule in the bundle", b.dir, h.Name)
			}
			for _, ac := range adapters {
				for _, r := range ac.ExternalRules {
					if r.Name.As != m.Metric.Name {
						continue
					}
					// The adapter lists the series its seriesQuery finds and
					// names them by name.matches/as: it must find serve's.
					sq, err := parser.NewParser(parser.Options{}).ParseMetricSelector(r.SeriesQuery)
					if err != nil {
						t.Fatal(err)
					}
					found := 0
					for _, s := range exported {
						ok := true
						for _, mm := range sq {
							ok = ok && mm.Matches(s.Get(mm.Name))
						}
						if ok {
							found++
						}
					}
					if found == 0 {
						t.Errorf("%s: adapter seriesQuery %q finds none of serve's series %v", b.dir, r.SeriesQuery, exported)
					}
					var ms []string
					keys := make([]string, 0, len(sel))
					for k := range sel {
						keys = append(keys, k)
					}
					sort.Strings(keys)
					for _, k := range keys {
						ms = append(ms, fmt.Sprintf("%s=%q", k, sel[k]))
					}
					q := strings.NewReplacer("<<.Series>>", m.Metric.Name, "<<.LabelMatchers>>", strings.Join(ms, ",")).Replace(r.MetricsQuery)
					if got := evalMax(t, q, exported); len(got) != 1 || got[0] != "target="+sel["target"] {
						t.Errorf("%s HPA %s: adapter query %q on serve's series returns %v, want the one series of target %s", b.dir, h.Name, q, got, sel["target"])
					}
					if got := evalMax(t, q, scraped(served, otherScrape)); len(got) != 0 {
						t.Errorf("%s HPA %s: adapter query %q reads another installation's series (%v)", b.dir, h.Name, q, otherScrape)
					}
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no consumer checked")
	}
}

// TestDocQueriesReadWhatServeExports: every KEDA query for target chat that
// the docs give (`max(infscale_desired_replicas{target="chat"...})`, a P/D
// pool's with its role) and the prometheus-adapter rule docs/hpa.md
// prints, evaluated on what serve's loop exports for the shipped configs
// (a single target chat, and chat as a prefill/decode pair), as scraped by
// the installation the query names (its namespace and service, else
// deploy/base's): each returns one series, and a role's query only its
// pool's.
func TestDocQueriesReadWhatServeExports(t *testing.T) {
	var served []labels.Labels
	for _, b := range bundles(t) {
		if b.dir == "base" || b.dir == "pd" {
			for _, f := range b.configs {
				served = append(served, servedDesired(t, f)...)
			}
		}
	}
	re := regexp.MustCompile(`max\(infscale_desired_replicas\{target="chat"[^}]*\}\)`)
	n := 0
	docs, err := filepath.Glob(filepath.Join(deployDir, "..", "docs", "*.md"))
	if err != nil || len(docs) == 0 {
		t.Fatalf("docs/*.md: %v", err)
	}
	for _, d := range docs {
		b, err := os.ReadFile(d)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range re.FindAllString(string(b), -1) {
			n++
			// Scraped as the installation the query names (a chart
			// release's namespace and service, docs/chart.md), else as
			// deploy/base's.
			inst := map[string]string{}
			ms := equalMatchers(t, q)
			for k, v := range baseScrape {
				inst[k] = v
				if w, ok := ms[k]; ok {
					inst[k] = w
				}
			}
			exported := scraped(served, inst)
			role := roleOf(t, q)
			matched := 0
			for _, s := range exported {
				if s.Get("target") == "chat" && (role == 0 || s.Get("role") == role.String()) {
					matched++
				}
			}
			if got := evalMax(t, q, exported); len(got) != 1 || matched == 0 {
				t.Errorf("%s: %s on serve's series %v returns %d series (its own: %d), want one", filepath.Base(d), q, exported, len(got), matched)
			}
		}
		// docs/hpa.md's adapter rule, as printed.
		if filepath.Base(d) == "hpa.md" {
			text := string(b)
			i := strings.Index(text, "```yaml\nexternalRules:")
			if i < 0 {
				t.Fatal("docs/hpa.md prints no externalRules block")
			}
			block := text[i+len("```yaml\n"):]
			block = block[:strings.Index(block, "```")]
			var ac AdapterConfig
			if err := yaml.UnmarshalStrict([]byte(block), &ac); err != nil {
				t.Fatalf("docs/hpa.md's externalRules: %v", err)
			}
			for _, r := range ac.ExternalRules {
				n++
				q := strings.NewReplacer("<<.Series>>", r.Name.As, "<<.LabelMatchers>>", `target="chat",namespace="infscale",service="infscale"`).Replace(r.MetricsQuery)
				if got := evalMax(t, q, scraped(served, baseScrape)); len(got) != 1 || got[0] != "target=chat" {
					t.Errorf("docs/hpa.md: adapter query %q on serve's series returns %v, want target chat's one series", q, got)
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no query found in docs/")
	}
}

// baseScrape is the target labels prometheus-operator gives the series of
// deploy/base's ServiceMonitor: namespace, the Service's namespace
// (kustomization.yaml's namespace: infscale), and service, its name
// (service.yaml: infscale). otherScrape is a second installation's, the
// chart's release infscale in namespace staging.
var (
	baseScrape  = map[string]string{"namespace": "infscale", "service": "infscale"}
	otherScrape = map[string]string{"namespace": "staging", "service": "infscale"}
)

// scraped is series with the scrape's target labels added, as Prometheus
// stores them (infscale_desired_replicas has no label of these names).
func scraped(series []labels.Labels, target map[string]string) []labels.Labels {
	out := make([]labels.Labels, 0, len(series))
	for _, s := range series {
		b := labels.NewBuilder(s)
		for k, v := range target {
			b.Set(k, v)
		}
		out = append(out, b.Labels())
	}
	return out
}

// startServe runs serve.Run on cfg with source src on a free loopback port
// (no rebuild from Prometheus) until the test ends, and returns its
// address; an error other than the cancel fails the test.
func startServe(t *testing.T, cfg *config.File, src serve.Source) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- serve.Run(ctx, cfg, serve.Options{Listener: l, Source: src, NoRebuild: true})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil && !errors.Is(err, context.Canceled) {
			t.Errorf("serve: %v", err)
		}
	})
	return l.Addr().String()
}
