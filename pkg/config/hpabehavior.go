package config

import (
	"fmt"
	"reflect"

	"github.com/goccy/go-yaml/ast"
	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/infscale/infscale/pkg/recommend"
)

// MaxBehaviorBytes bounds a behavior document (1 MiB; an HPA behavior is
// a few hundred bytes).
const MaxBehaviorBytes = 1 << 20

// DecodeBehavior decodes the HPA's own autoscaling/v2 behavior YAML (as in
// an HPA's spec.behavior, either bare — scaleUp:/scaleDown: at the top — or
// under a top-level `behavior:` key) strictly and validates it as the API
// server would, with the machinery that reads a configuration file's
// behavior: (the same decoder, messages and rules). Unknown keys, wrong
// types, a non-integer where the API has an int32
// (stabilizationWindowSeconds: 1.5, value: "2", periodSeconds: 1e3) and
// values outside the HPA's limits (recommend.ValidateBehavior) are all
// reported at once, as Errors: each "FILENAME:LINE:COL: FIELD: what is
// wrong (what is allowed)", FIELD such as
// behavior.scaleDown.policies[0].value, at most MaxErrors of them. The k8s
// type's json tags name the keys; tolerance is a Kubernetes quantity
// ("0.05", "50m"). A document larger than MaxBehaviorBytes or nested deeper
// than internal/yamlbound allows is refused before it is parsed.
func DecodeBehavior(data []byte, filename string) (autoscalingv2.HorizontalPodAutoscalerBehavior, error) {
	var b, none autoscalingv2.HorizontalPodAutoscalerBehavior
	if len(data) > MaxBehaviorBytes {
		return none, fmt.Errorf("%s: %d bytes, larger than the %d allowed for a behavior", filename, len(data), MaxBehaviorBytes)
	}
	d := newStrictDecoder(filename)
	body, errs := d.document(data, func(body ast.Node) string {
		if wrapped(body) {
			return ""
		}
		return "behavior"
	})
	if errs != nil {
		return none, errs
	}
	if body == nil {
		return none, Errors{{File: filename, Msg: "no behavior in the file: want an autoscaling/v2 HorizontalPodAutoscalerBehavior YAML (scaleUp:, scaleDown:)"}}
	}
	if wrapped(body) {
		var w struct {
			Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `yaml:"behavior"`
		}
		d.decode(body, reflect.ValueOf(&w).Elem(), "")
		if w.Behavior != nil {
			b = *w.Behavior
		}
	} else {
		d.decode(body, reflect.ValueOf(&b).Elem(), "behavior")
	}
	// The rules are Validate's; a field that failed to decode is not
	// reported again (its zero value is not what the file says).
	v := &validator{d: d, failed: d.failed}
	d.failed = nil
	for _, fe := range recommend.ValidateBehavior(b) {
		v.at(fe.Path, "%s", fe.Msg)
	}
	if errs := d.errors(); errs != nil {
		return none, errs
	}
	return b, nil
}

// wrapped reports whether a behavior document's top level is a mapping
// with a behavior: key (an HPA spec's), not scaleUp:/scaleDown: bare.
func wrapped(body ast.Node) bool {
	mn, ok := body.(ast.MapNode)
	if !ok {
		return false
	}
	for it := mn.MapRange(); it.Next(); {
		if sn, ok := it.Key().(*ast.StringNode); ok && sn.Value == "behavior" {
			return true
		}
	}
	return false
}
