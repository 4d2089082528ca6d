package config

import (
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/infscale/infscale/internal/yamlbound"
	"github.com/infscale/infscale/pkg/recommend"
)

// wrappedBehavior matches a document whose top level is `behavior:`.
var wrappedBehavior = regexp.MustCompile(`(?m)^behavior:`)

// behaviorKeys is what the behavior YAML allows, for messages.
const behaviorKeys = "the autoscaling/v2 HorizontalPodAutoscalerBehavior keys scaleUp, scaleDown with stabilizationWindowSeconds, selectPolicy, policies[type, value, periodSeconds], tolerance"

// MaxBehaviorBytes bounds a behavior document (1 MiB; an HPA behavior is
// a few hundred bytes).
const MaxBehaviorBytes = 1 << 20

// DecodeBehavior decodes the HPA's own autoscaling/v2 behavior YAML (as in
// an HPA's spec.behavior, either bare — scaleUp:/scaleDown: at the top — or
// under a top-level `behavior:` key) strictly and validates it as the API
// server would: unknown keys, wrong types, a non-integer where the API has an
// int32 (stabilizationWindowSeconds: 1.5, value: "2", periodSeconds: 1e3)
// and values outside the HPA's limits (see recommend.Policy.Validate) are errors, each
// "FILENAME:LINE:COL: FIELD: what is wrong (what is allowed)", FIELD such as
// behavior.scaleDown.policies[0].value; all are reported (errors.Join). The
// k8s type's json tags name the keys (goccy/go-yaml falls back to them);
// tolerance is a Kubernetes quantity ("0.05", "50m"). A document larger
// than MaxBehaviorBytes or nested deeper than internal/yamlbound allows is
// refused before it is parsed.
func DecodeBehavior(data []byte, filename string) (autoscalingv2.HorizontalPodAutoscalerBehavior, error) {
	if len(data) > MaxBehaviorBytes {
		return autoscalingv2.HorizontalPodAutoscalerBehavior{}, fmt.Errorf("%s: %d bytes, larger than the %d allowed for a behavior", filename, len(data), MaxBehaviorBytes)
	}
	var be *yamlbound.Error
	if errors.As(yamlbound.Check(data), &be) { // before the parse: its cost grows with the square of the depth
		return autoscalingv2.HorizontalPodAutoscalerBehavior{}, fmt.Errorf("%s:%d:%d: %s", filename, be.Line, be.Column, be.Msg)
	}
	opts := []yaml.DecodeOption{yaml.DisallowUnknownField(), yaml.UseJSONUnmarshaler()}
	var b autoscalingv2.HorizontalPodAutoscalerBehavior
	var err error
	root := "$"
	if wrappedBehavior.Match(data) {
		root = "$.behavior"
		var w struct {
			Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `yaml:"behavior"`
		}
		err = yaml.UnmarshalWithOptions(data, &w, opts...)
		if err == nil && w.Behavior != nil {
			b = *w.Behavior
		}
	} else {
		err = yaml.UnmarshalWithOptions(data, &b, opts...)
	}
	if err != nil {
		return autoscalingv2.HorizontalPodAutoscalerBehavior{}, yamlError(filename, err)
	}
	file, err := parser.ParseBytes(data, 0)
	if err != nil { // decoded above, so this does not happen
		return autoscalingv2.HorizontalPodAutoscalerBehavior{}, yamlError(filename, err)
	}
	var errs []error
	// goccy converts 1.5, "2" and 1e3 into an int32 silently; the API
	// server's JSON decoding refuses them.
	for _, dir := range []struct {
		name string
		r    *autoscalingv2.HPAScalingRules
	}{{"scaleUp", b.ScaleUp}, {"scaleDown", b.ScaleDown}} {
		if dir.r == nil {
			continue
		}
		fields := []string{"stabilizationWindowSeconds"}
		for i := range dir.r.Policies {
			fields = append(fields, fmt.Sprintf("policies[%d].value", i), fmt.Sprintf("policies[%d].periodSeconds", i))
		}
		for _, f := range fields {
			path := dir.name + "." + f
			n := yamlExact(file, root+"."+path)
			if n == nil || n.Type() == ast.IntegerType || n.Type() == ast.NullType {
				continue
			}
			errs = append(errs, yamlAt(filename, n, "behavior."+path+": "+strings.TrimSpace(n.String())+" must be a whole number (an int32 in the autoscaling/v2 API)"))
		}
	}
	for _, e := range recommend.ValidateBehavior(b) {
		n := yamlNode(file, root+strings.TrimPrefix(e.Path, "behavior"))
		errs = append(errs, yamlAt(filename, n, e.Error()))
	}
	if len(errs) > 0 {
		return autoscalingv2.HorizontalPodAutoscalerBehavior{}, errors.Join(errs...)
	}
	return b, nil
}

// yamlExact finds the node at a YAML path, nil when absent.
func yamlExact(file *ast.File, path string) ast.Node {
	p, err := yaml.PathString(path)
	if err != nil {
		return nil
	}
	n, err := p.FilterFile(file)
	if err != nil {
		return nil
	}
	return n
}

// yamlNode finds the node at a YAML path such as
// $.behavior.scaleDown.policies[0].value, or its nearest parent present
// (a field left out); nil when none is.
func yamlNode(file *ast.File, path string) ast.Node {
	for path != "$" && path != "" {
		if n := yamlExact(file, path); n != nil {
			return n
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			break
		}
		path = path[:i]
	}
	return nil
}

// yamlAt prefixes msg with filename:line:col of n (filename alone without n).
func yamlAt(filename string, n ast.Node, msg string) error {
	// A mapping's own token is its first ':'; point at its first key.
	switch m := n.(type) {
	case *ast.MappingNode:
		if len(m.Values) > 0 {
			n = m.Values[0].Key
		}
	case *ast.MappingValueNode:
		n = m.Key
	}
	if n == nil || n.GetToken() == nil {
		return fmt.Errorf("%s: %s", filename, msg)
	}
	pos := n.GetToken().Position
	return fmt.Errorf("%s:%d:%d: %s", filename, pos.Line, pos.Column, msg)
}

// yamlError prefixes a goccy error with filename:line:col.
func yamlError(filename string, err error) error {
	var ye yaml.Error
	if errors.As(err, &ye) && ye.GetToken() != nil {
		pos := ye.GetToken().Position
		return fmt.Errorf("%s:%d:%d: %s (allowed: %s)", filename, pos.Line, pos.Column, ye.GetMessage(), behaviorKeys)
	}
	return fmt.Errorf("%s: %w", filename, err)
}
