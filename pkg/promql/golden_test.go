package promql

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/infscale/infscale/pkg/modelserver"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// golden compares got with testdata/<name>.golden (or rewrites it with
// -update). Review every golden diff by hand: the files are the documented
// query shapes (docs/promql.md).
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if string(want) != got {
		t.Errorf("%s differs (go test -update rewrites it):\n--- got\n%s\n--- want\n%s", path, got, want)
	}
}

// caseSelector is case 15's hostile model name inside a usual selector.
const caseSelector = `{namespace="llm", pod=~"chat-.*", model_name="team \"a\" model\\v2"}`

func printQueries(t *testing.T, tg Target, opts Options) string {
	t.Helper()
	qs, err := Build(tg, opts)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, s := range Signals() {
		q, ok := qs[s]
		if !ok {
			fmt.Fprintf(&b, "%s: (none)\n", s)
			continue
		}
		// Every built query must parse and print to itself: canonical.
		e, err := Validate(q)
		if err != nil {
			t.Errorf("%s: %v", s, err)
		} else if e.String() != q {
			t.Errorf("%s: not canonical:\n%s\n%s", s, q, e)
		}
		fmt.Fprintf(&b, "%s: %s\n", s, q)
	}
	return b.String()
}

func TestGoldenQueries(t *testing.T) {
	sel, err := ParseSelector(caseSelector)
	if err != nil {
		t.Fatal(err)
	}
	full := func(s modelserver.Server) Target {
		return Target{
			Name: "chat", Server: s, Selector: sel,
			TTFTQuantile: 0.95, TTFTWindow: 3 * time.Minute, CPU: true,
			QueueTimeQuantile: 0.9, QueueTimeWindow: 2 * time.Minute, ITLQuantile: 0.5, ITLWindow: time.Minute, Demand: true,
			Replicas: `kube_deployment_spec_replicas{namespace="llm",deployment="chat"}`,
			Held:     `sum(infscale_activator_held_requests{service="activator-chat"})`,
		}
	}
	for _, tc := range []struct {
		name string
		tg   Target
		opts Options
	}{
		{"vllm", full(modelserver.VLLM), Options{}},
		{"sglang", full(modelserver.SGLang), Options{}},
		{"llamacpp", full(modelserver.LlamaCpp), Options{}},
		{"vllm-ready", full(modelserver.VLLM), Options{Liveness: LiveReady}},
		{"vllm-staleness-no-ha", full(modelserver.VLLM), Options{Liveness: LiveStaleness, ReplicaLabels: []string{}}},
		{"vllm-minimal", Target{Name: "m", Server: modelserver.VLLM, Selector: sel}, Options{PodLabel: "kubernetes_pod_name"}},
		{"vllm-override", Target{Name: "o", Server: modelserver.VLLM, Selector: sel,
			Overrides: map[Signal]string{Waiting: `sum(my_gateway_queue{route="chat"})`}}, Options{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			golden(t, tc.name, printQueries(t, tc.tg, tc.opts))
		})
	}
}

// The batched form of one signal for two targets: each target's query
// tagged with its index by label_replace, joined with or.
func TestGoldenBatch(t *testing.T) {
	a, _ := ParseSelector(`{namespace="llm", pod=~"chat-.*"}`)
	b, _ := ParseSelector(`{namespace="llm", pod=~"code-.*"}`)
	var (
		jobs   []job
		exprs  []parser.Expr
		shapes = shapeSet{}
	)
	for i, tg := range []Target{{Name: "chat", Server: modelserver.VLLM, Selector: a}, {Name: "code", Server: modelserver.SGLang, Selector: b}} {
		ex, err := buildExprs(tg, Options{})
		if err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, job{target: i, text: shapes.compact(ex[Running].String(), newSelectorText(tg.Selector, tg.Server, Options{}))})
		exprs = append(exprs, ex[Running])
	}
	scalar, err := Validate(`scalar(sum(infscale_activator_held_requests{service="activator-chat"}))`)
	if err != nil {
		t.Fatal(err)
	}
	jobs = append(jobs, job{target: 2, text: verbatim(scalar.String()), scalar: true})
	exprs = append(exprs, scalar)
	q := textString(newBatchText(jobs))
	if e, err := Validate(q); err != nil || e.String() != q {
		t.Fatalf("batch query not canonical or invalid: %v", err)
	}
	if tree := orTree(batchBranches(exprs)).String(); tree != q {
		t.Fatalf("joined branches differ from the printed or-tree:\n%s\n%s", q, tree)
	}
	// Each job keeps its own text (the fallback query when the batch is
	// rejected): the printed AST, from its shape and its matchers.
	for k, j := range jobs {
		if got := j.text.String(); got != exprs[k].String() || j.text.rawLen() != len(got) {
			t.Errorf("target %d: job text %q (length %d), want %q", j.target, got, j.text.rawLen(), exprs[k].String())
		}
	}
	golden(t, "batch", q+"\n")
}

func TestBuildErrors(t *testing.T) {
	sel, _ := ParseSelector(`{namespace="llm"}`)
	for _, tc := range []struct {
		name string
		tg   Target
		want string
	}{
		{"unknown server", Target{Name: "x", Selector: sel}, "server profile is required"},
		{"no selector", Target{Name: "x", Server: modelserver.VLLM}, "empty selector"},
		{"bad quantile", Target{Name: "x", Server: modelserver.VLLM, Selector: sel, TTFTQuantile: 95, TTFTWindow: time.Minute}, "0 < quantile < 1"},
		{"bad override", Target{Name: "x", Server: modelserver.VLLM, Selector: sel, Overrides: map[Signal]string{Running: `sum(x`}}, "running query: invalid PromQL `sum(x`: 1:6: parse error"},
		{"bad held", Target{Name: "x", Server: modelserver.VLLM, Selector: sel, Held: `x[5m]`}, "held query"},
	} {
		_, err := Build(tc.tg, Options{})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
}

// batchBranches are the branches batchText joins, as ASTs, for the jobs
// of exprs.
// orTree is es joined by or as a balanced tree, printed by Prometheus's
// parser: es[lo:hi] splits at (lo+hi)/2, each side of more than one
// operand in parentheses.
func orTree(es []parser.Expr) parser.Expr {
	if len(es) == 1 {
		return es[0]
	}
	side := func(es []parser.Expr) parser.Expr {
		if len(es) == 1 {
			return es[0]
		}
		return &parser.ParenExpr{Expr: orTree(es)}
	}
	m := len(es) / 2
	return &parser.BinaryExpr{Op: parser.LOR, LHS: side(es[:m]), RHS: side(es[m:]),
		VectorMatching: &parser.VectorMatching{Card: parser.CardManyToMany}}
}

func batchBranches(exprs []parser.Expr) []parser.Expr {
	es := make([]parser.Expr, len(exprs))
	for k, ex := range exprs {
		if ex.Type() == parser.ValueTypeScalar {
			ex = call("vector", ex)
		}
		es[k] = call("label_replace", ex, str(TargetLabel), str(strconv.Itoa(k)), str(""), str(""))
	}
	return es
}

func str(s string) *parser.StringLiteral { return &parser.StringLiteral{Val: s} }

// TestGoldenEPP: the queries of a target read from an llm-d EPP (docs/llm-d.md):
// pool gauges under their llm_d_epp_ name or their deprecated twin, never
// added; the flow-control queue as held.
func TestGoldenEPP(t *testing.T) {
	sel, err := ParseSelector(`{namespace="llm", service="chat-epp"}`)
	if err != nil {
		t.Fatal(err)
	}
	tg := Target{Name: "chat", Server: modelserver.EPP, Selector: sel, TTFTQuantile: 0.95, TTFTWindow: 3 * time.Minute,
		ITLQuantile: 0.5, ITLWindow: time.Minute, Demand: true, FlowControlHeld: true, Stuck: true, Duplicates: true, CPU: true}
	got := printQueries(t, tg, Options{})
	golden(t, "epp", got)
	for _, want := range []string{
		"running: (round(max(llm_d_epp_average_running_requests{namespace=\"llm\",service=\"chat-epp\"} * llm_d_epp_ready_endpoints{namespace=\"llm\",service=\"chat-epp\"})) or round(max(llm_d_epp_average_running_requests{namespace=\"llm\",service=\"chat-epp\"}) * max(llm_d_epp_ready_endpoints{namespace=\"llm\",service=\"chat-epp\"}))) or (max(llm_d_epp_ready_endpoints{namespace=\"llm\",service=\"chat-epp\"}) == 0) or ((round(max(inference_pool_average_running_requests",
		"held: sum(clamp_min(max without (prometheus, prometheus_replica, replica) (llm_d_epp_flow_control_queue_size{namespace=\"llm\",service=\"chat-epp\"}), 0) or clamp_min(max without (prometheus, prometheus_replica, replica) (inference_extension_flow_control_queue_size{namespace=\"llm\",service=\"chat-epp\"}), 0))",
		"stuck: (none)", "cpu: (none)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("EPP queries lack %q:\n%s", want, got)
		}
	}
}
