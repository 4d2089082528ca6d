package backtest

import (
	"strings"
	"testing"

	"github.com/infscale/infscale/pkg/promql"
)

// TestSplitPair: one selector split into the pair's pools by the role
// label, written out as PromQL matchers; a selector already on the label
// and a label that is not a Prometheus name refused.
func TestSplitPair(t *testing.T) {
	base, err := promql.ParseSelector(`{namespace="llm",app=~"chat.*"}`)
	if err != nil {
		t.Fatal(err)
	}
	got, err := SplitPair(base, RoleLabel)
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []string{`namespace="llm" app=~"chat.*" llm_d_ai_role="prefill"`, `namespace="llm" app=~"chat.*" llm_d_ai_role="decode"`} {
		var s []string
		for _, m := range got[i] {
			s = append(s, m.String())
		}
		if strings.Join(s, " ") != want {
			t.Errorf("pool %d: %v; want %s", i, s, want)
		}
	}
	if len(base) != 2 {
		t.Errorf("base changed: %v", base)
	}
	on, _ := promql.ParseSelector(`{llm_d_ai_role="decode"}`)
	if _, err := SplitPair(on, RoleLabel); err == nil || !strings.Contains(err.Error(), `already matches on llm_d_ai_role (llm_d_ai_role="decode")`) {
		t.Errorf("selector on the label: %v", err)
	}
	if _, err := SplitPair(base, "llm-d.ai/role"); err == nil || !strings.Contains(err.Error(), `"llm-d.ai/role" is not a Prometheus label name`) {
		t.Errorf("pod label as written in Kubernetes: %v", err)
	}
}
