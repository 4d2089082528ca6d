package promql

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"

	"github.com/infscale/infscale/pkg/profile"
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
		tg := Target{Name: fmt.Sprintf("t%d", i), Server: profile.VLLM, Selector: ms,
			TTFTQuantile: 0.95, TTFTWindow: 3 * time.Minute, CPU: true, Stuck: true, Duplicates: true, Demand: true,
			Replicas: fmt.Sprintf(`kube_deployment_spec_replicas{deployment="t%d"}`, i)}
		if i == 4 {
			tg.Server = profile.SGLang
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
					want = orChain(batchBranches(exprs)).String()
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
