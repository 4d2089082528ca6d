package promql

import (
	"fmt"
	"math/bits"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/infscale/infscale/pkg/modelserver"
)

// A Plan sends the queries the PromQL printer writes: each batch's text is
// the printed or-chain of its targets' label_replace branches (one
// target's printed query when alone), and each job's text (the per-target
// fallback) its printed query, whatever the selector (matchers on the pod
// and namespace labels only, on neither, escapes, UTF-8) and options, held
// compactly or not. Targets whose selectors differ only in values share
// one shape per signal.
func TestPlanTextsArePrinted(t *testing.T) {
	selectors := []string{
		`{namespace="llm", pod=~"chat-.*"}`,
		`{namespace="llm", deployment="t1"}`,
		`{namespace="llm", deployment="t2"}`,
		`{namespace="llm"}`,
		`{job="vllm", model_name="a b"}`,
		`{pod=~"a\\.b\"c|d", namespace="é", model_name="x=y&z+%#;"}`,
		`{"ünïcode.label"="v", namespace="llm"}`,
	}
	var targets []Target
	for i, s := range selectors {
		ms, err := ParseSelector(s)
		if err != nil {
			t.Fatal(err)
		}
		tg := Target{Name: fmt.Sprintf("t%d", i), Server: modelserver.VLLM, Selector: ms,
			TTFTQuantile: 0.95, TTFTWindow: 3 * time.Minute, CPU: true, Stuck: true, Duplicates: true, Demand: true,
			Replicas: fmt.Sprintf(`kube_deployment_spec_replicas{deployment="t%d"}`, i)}
		if i == 4 {
			tg.Server = modelserver.SGLang
			tg.Overrides = map[Signal]string{Waiting: `sum(my_gateway_queue{route="chat"})`}
			tg.Held = `scalar(sum(infscale_activator_held_requests{service="a"}))`
		}
		targets = append(targets, tg)
	}
	for _, o := range []Options{{}, {Liveness: LiveReady}, {Liveness: LiveStaleness, ReplicaLabels: []string{}}} {
		for _, size := range []int{0, 1, 3} {
			p := NewPlan(targets, o, size)
			for _, b := range p.batches {
				exprs := make([]parser.Expr, len(b.jobs))
				for k, j := range b.jobs {
					ex, err := buildExprs(targets[j.target], o)
					if err != nil {
						t.Fatal(err)
					}
					exprs[k] = ex[b.signal]
					if got := j.text.String(); got != exprs[k].String() || j.text.rawLen() != len(got) {
						t.Errorf("%+v: %s of %s: text %q (length %d), want %q", o, b.signal, targets[j.target].Name, got, j.text.rawLen(), exprs[k].String())
					}
				}
				want := exprs[0].String()
				if len(exprs) > 1 {
					want = orTree(batchBranches(exprs)).String()
				}
				if got := textString(b.text); got != want {
					t.Errorf("%+v, batch %d: %s batch\n%s\nwant\n%s", o, size, b.signal, got, want)
				}
				if short := b.text.short(); len(exprs) > 1 && short != want[:min(len(want), errQueryLen)] {
					t.Errorf("%s batch: errors name %q", b.signal, short)
				}
			}
		}
	}
	// 1,000 targets of one selector shape: one shape per signal but the
	// replicas query (verbatim, one per target).
	p := NewPlan(manyTargets(1000), Options{}, 0)
	shapes := map[*queryShape]bool{}
	for _, b := range p.batches {
		if b.signal == Current {
			continue
		}
		for _, j := range b.jobs {
			shapes[j.text.shape] = true
		}
	}
	if len(shapes) != len(p.batches)-1 {
		t.Errorf("%d shapes for %d signals", len(shapes), len(p.batches)-1)
	}
}

// TestBatchParens: the balanced or-tree's parentheses, worked out by hand
// for n = 1 to 7 (n = 3 is "b0 or (b1 or b2)"; n = 7 is
// "(b0 or (b1 or b2)) or ((b3 or b4) or (b5 or b6))"), and its depth bound.
func TestBatchParens(t *testing.T) {
	for n, want := range map[int]string{
		1: "b0",
		2: "b0 or b1",
		3: "b0 or (b1 or b2)",
		4: "(b0 or b1) or (b2 or b3)",
		5: "(b0 or b1) or (b2 or (b3 or b4))",
		7: "(b0 or (b1 or b2)) or ((b3 or b4) or (b5 or b6))",
	} {
		var got strings.Builder
		for k := range n {
			if k > 0 {
				got.WriteString(" or ")
			}
			opens, closes := batchParens(k, n)
			fmt.Fprintf(&got, "%sb%d%s", strings.Repeat("(", opens), k, strings.Repeat(")", closes))
		}
		if got.String() != want {
			t.Errorf("n=%d: %s, want %s", n, got.String(), want)
		}
	}
	for _, n := range []int{2, 3, 1000, 10000, 1 << 20} {
		for _, k := range []int{0, 1, n / 2, n - 1} {
			if o, c := batchParens(k, n); o+c > 2*bits.Len(uint(n)) {
				t.Errorf("n=%d k=%d: %d+%d parentheses, more than batchWrap counts", n, k, o, c)
			}
		}
	}
}
