package replay

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/recommend"
	gpu "github.com/infscale/infscale/pkg/replica"
)

// decisionFields is what of a built policy decides: its metrics, lookahead,
// behavior, tolerance, guard, hold, ramp bound and capacity (bounds and
// scale to zero are the user's).
func decisionFields(t *testing.T, p *recommend.Policy) recommend.Policy {
	t.Helper()
	q := *p
	q.Min, q.Max, q.Zero, q.Schedule = 1, 10, nil, nil
	if err := q.Validate(); err != nil {
		t.Fatal(err)
	}
	g := recommend.Guard{Settle: recommend.DefaultSettle, Drain: recommend.DefaultDrain}
	if q.Guard != nil {
		g = *q.Guard
	}
	q.Guard = &g
	return q
}

// presetEnv is the replay environment of model m at TTFT SLO slo (0: the
// default) and the recommended preset built in it.
func presetEnv(t *testing.T, m Model, slo float64) (env, *recommend.Policy) {
	t.Helper()
	sp, err := newSpeed(m)
	if err != nil {
		t.Fatal(err)
	}
	e := env{cfg: Config{Model: m, SLOTTFT: slo}.Defaults(), sp: sp}
	preset, err := recommendedPolicy(e)
	if err != nil {
		t.Fatal(err)
	}
	return e, preset
}

// TestRecommendedWrittenOut: the preset `recommended` is, replica by
// replica, the policy string it says to write out (its lookahead the
// replica's cold start + 45 s, hold two cold starts, ramp bound
// recommend.RampBoundFor(cold start, 60 s)) and, for the reference replica,
// the serve target block docs/config.md gives for it: serve then decides
// as the replay that backtested it.
func TestRecommendedWrittenOut(t *testing.T) {
	for _, r := range matrixReplicas() {
		m := matrixModel(t, r)
		e, preset := presetEnv(t, m, 0)
		cold := math.Ceil(m.ColdStart())
		z := recommend.RampBoundFor(time.Duration(cold)*time.Second, RecommendedDownWindow)
		spec := fmt.Sprintf("demand:0.9,lookahead=%g,downwindow=60,hold=%g,rampbound=%v,ttft:2,queuewait:0.4", cold+45, 2*cold, z)
		pol, err := ParsePolicy(spec)
		if err != nil {
			t.Fatal(err)
		}
		c, err := pol.build(e)
		if err != nil {
			t.Fatal(err)
		}
		written := c.(*infscaleCtl).p
		if a, b := decisionFields(t, preset), decisionFields(t, written); !reflect.DeepEqual(a, b) {
			t.Errorf("%s: recommended %+v\nwritten out as %s: %+v", r.name, a, spec, b)
		}
	}

	// docs/config.md's block, for the reference replica.
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "config.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(doc), "block:\n\n```yaml\n  metrics:")
	block, _, ok2 := strings.Cut("  metrics:"+after, "```")
	if !ok || !ok2 {
		t.Fatal("docs/config.md: no recommended target block")
	}
	cfg, err := config.Parse([]byte("targets:\n- name: chat\n  scrape: [http://10.0.0.5:8000/metrics]\n  maxReplicaCount: 10\n"+block), "docs/config.md block")
	if err != nil {
		t.Fatal(err)
	}
	served, err := cfg.Targets[0].Policy()
	if err != nil {
		t.Fatal(err)
	}
	_, preset := presetEnv(t, referenceModel(t), 0)
	a, b := decisionFields(t, preset), decisionFields(t, &served)
	// The block writes the ramp bound to two decimals (0.26 for 0.2602).
	if math.Abs(a.RampBound-b.RampBound) > 0.005 {
		t.Errorf("docs/config.md block ramp_bound %v, recommended %v", b.RampBound, a.RampBound)
	}
	b.RampBound = a.RampBound
	if !reflect.DeepEqual(a, b) {
		t.Errorf("docs/config.md's block decides otherwise than recommended:\nrecommended %+v\nblock       %+v", a, b)
	}
}

// TestRecommendedReference: the legend under a table writes `recommended`
// out as RecommendedReference, with the hold and ramp bound it has (the
// legend said demand:0.9,lookahead=136,downwindow=60,ttft:2,queuewait:0.4:
// written out that way it had neither), and on the reference replica (a
// 91 s cold start: lookahead 91 + 45 = 136 s, hold 2 x 91 = 182 s) the
// string decides as the preset, its ramp bound rounded.
func TestRecommendedReference(t *testing.T) {
	m, err := gpu.New(gpu.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	if cold := math.Ceil(m.ColdStart()); cold != 91 {
		t.Fatalf("reference replica's cold start %g s, want 91 (docs/design.md)", cold)
	}
	e, preset := presetEnv(t, m, 0)
	pol, err := ParsePolicy(RecommendedReference)
	if err != nil {
		t.Fatal(err)
	}
	c, err := pol.build(e)
	if err != nil {
		t.Fatal(err)
	}
	// The ramp bound is written to two places: Φ⁻¹(91 / (91 + 60)) =
	// Φ⁻¹(0.6026) = 0.2602 (the normal table: Φ(0.26) = 0.6026).
	a, b := decisionFields(t, preset), decisionFields(t, c.(*infscaleCtl).p)
	if math.Abs(a.RampBound-0.2602) > 5e-5 || b.RampBound != 0.26 {
		t.Errorf("ramp bound: preset %v, written out %v; want 0.2602 and 0.26", a.RampBound, b.RampBound)
	}
	a.RampBound = b.RampBound
	if !reflect.DeepEqual(a, b) {
		t.Errorf("recommended %+v\nwritten out as %s: %+v", a, RecommendedReference, b)
	}
	legend := strings.Join(RowLegend([]string{"recommended"}, 91, 2, ""), "\n")
	if !strings.Contains(legend, "demand:0.9,lookahead=136,downwindow=60,hold=182,rampbound=0.26,ttft:2,queuewait:0.4 on the reference replica") {
		t.Errorf("legend %q lacks the preset written out with its hold and ramp bound", legend)
	}
}

// TestRecommendedFor: RecommendedFor writes `recommended` out replica by
// replica and at another SLO: the string decides as the preset in a replay
// of that replica at that SLO (profile's "+ schedule" row appends a floor
// to it). The reference replica at 2 s is lookahead 91 + 45 = 136, hold
// 2 x 91 = 182, queuewait 2 / 5 = 0.4.
func TestRecommendedFor(t *testing.T) {
	if got, want := RecommendedFor(90.2, 2), "demand:0.9,lookahead=136,downwindow=60,hold=182,rampbound="; !strings.HasPrefix(got, want) || !strings.HasSuffix(got, ",ttft:2,queuewait:0.4") {
		t.Errorf("RecommendedFor(90.2, 2) = %q, want %s...,ttft:2,queuewait:0.4", got, want)
	}
	for _, r := range matrixReplicas() {
		m := matrixModel(t, r)
		for _, slo := range []float64{2, 3} {
			e, preset := presetEnv(t, m, slo)
			spec := RecommendedFor(m.ColdStart(), slo)
			pol, err := ParsePolicy(spec)
			if err != nil {
				t.Fatalf("%s: %v", spec, err)
			}
			c, err := pol.build(e)
			if err != nil {
				t.Fatal(err)
			}
			if a, b := decisionFields(t, preset), decisionFields(t, c.(*infscaleCtl).p); !reflect.DeepEqual(a, b) {
				t.Errorf("%s at SLO %g s: recommended %+v\nwritten out as %s: %+v", r.name, slo, a, spec, b)
			}
		}
	}
}

// TestRowLegendReplica: the legend writes `recommended` out with the
// figures the replay ran it with, worked by hand: a 56 s cold start
// (image 10 s + weights 16 s + warm-up 30 s) gives lookahead 56 + 45 =
// 101, hold 2 x 56 = 112 and rampbound 0 (56 / 116 = 0.48 <= 0.5); 215 s
// (4 x H100, Llama-3.1-70B) lookahead 260, hold 430, rampbound
// Φ⁻¹(215 / 275 = 0.782) = 0.78 (Φ(0.78) = 0.7823); a 1 s SLO ttft:1
// and queuewait 1 / 5 = 0.2. The reference replica at 2 s, or figures not
// known (0), keep the reference line. A calibrated replica is named, the
// replay ran on it: its cold start of 91 s (a calibration fits speeds,
// not the start: image 45 s + weights 16 s + warm-up 30 s) writes the
// reference's figures out, said to be the reference replica's; another
// start names it beside them.
func TestRowLegendReplica(t *testing.T) {
	ref := "demand:0.9,lookahead=136,downwindow=60,hold=182,rampbound=0.26,ttft:2,queuewait:0.4 on the reference replica (lookahead"
	const cal = "the replica calibrated from chat.json"
	for _, c := range []struct {
		cold, slo float64
		replica   string
		want      string
	}{
		{91, 2, cal, "recommended: infscale's preset policy, demand:0.9,lookahead=136,downwindow=60,hold=182,rampbound=0.26,ttft:2,queuewait:0.4 on the replica calibrated from chat.json (lookahead, hold and rampbound follow this replica's cold start of 91 s, ttft and queuewait the 2 s SLO, as on the reference replica; causal: it sees only the past, as serve does)."},
		{56, 2, cal, "demand:0.9,lookahead=101,downwindow=60,hold=112,rampbound=0,ttft:2,queuewait:0.4 on the replica calibrated from chat.json (lookahead, hold and rampbound follow this replica's cold start of 56 s, ttft and queuewait the 2 s SLO; demand:0.9,lookahead=136,downwindow=60,hold=182,rampbound=0.26,ttft:2,queuewait:0.4 on the reference replica; causal"},
		{56, 2, "", "recommended: infscale's preset policy, demand:0.9,lookahead=101,downwindow=60,hold=112,rampbound=0,ttft:2,queuewait:0.4 here (lookahead, hold and rampbound follow this replica's cold start of 56 s, ttft and queuewait the 2 s SLO; "},
		{215, 2, "", "demand:0.9,lookahead=260,downwindow=60,hold=430,rampbound=0.78,ttft:2,queuewait:0.4 here"},
		{91, 1, "", "demand:0.9,lookahead=136,downwindow=60,hold=182,rampbound=0.26,ttft:1,queuewait:0.2 here"},
		{90.2, 2, "", ref},
		{0, 2, "", ref},
	} {
		got := strings.Join(RowLegend([]string{"recommended"}, c.cold, c.slo, c.replica), "\n")
		if !strings.Contains(got, c.want) {
			t.Errorf("cold start %g s, SLO %g s, replica %q: %q\nwant it to contain %q", c.cold, c.slo, c.replica, got, c.want)
		}
	}
}
