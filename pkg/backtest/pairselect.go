package backtest

import (
	"fmt"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
)

// RoleLabel is the Prometheus label that carries llm-d's pod label
// llm-d.ai/role (prefill, decode) on a pod's series: Kubernetes service
// discovery names it __meta_kubernetes_pod_label_llm_d_ai_role, which a
// labelmap of the pods' labels or a PodMonitor's podTargetLabels copies
// as llm_d_ai_role.
const RoleLabel = "llm_d_ai_role"

// PairRoles are the values of RoleLabel of a pair's pools, prefill then
// decode (llm-d's).
var PairRoles = [2]string{"prefill", "decode"}

// SplitPair is each pool's selector of a P/D pair read from one
// selector: base with label="prefill", then base with label="decode"
// (llm-d's role label is RoleLabel). Errors: label is not a Prometheus
// label name; base already matches on label (each pool would match
// nothing, or one pool both).
func SplitPair(base []*labels.Matcher, label string) ([2][]*labels.Matcher, error) {
	var out [2][]*labels.Matcher
	if !model.LabelName(label).IsValidLegacy() {
		return out, fmt.Errorf("%q is not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*; llm-d's pod label llm-d.ai/role is %s on the series when the scrape copies it)", label, RoleLabel)
	}
	for _, m := range base {
		if m.Name == label {
			return out, fmt.Errorf("the selector already matches on %s (%s); the pair's split adds %s=\"prefill\" and %s=\"decode\" itself", label, m, label, label)
		}
	}
	for i, role := range PairRoles {
		ms := append([]*labels.Matcher(nil), base...)
		out[i] = append(ms, labels.MustNewMatcher(labels.MatchEqual, label, role))
	}
	return out, nil
}
