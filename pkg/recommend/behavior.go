package recommend

import (
	"errors"
	"fmt"
	"regexp"

	"github.com/goccy/go-yaml"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// wrappedBehavior matches a document whose top level is `behavior:`.
var wrappedBehavior = regexp.MustCompile(`(?m)^behavior:`)

// DecodeBehavior decodes the HPA's own autoscaling/v2 behavior YAML (as in
// an HPA's spec.behavior, either bare — scaleUp:/scaleDown: at the top — or
// under a top-level `behavior:` key) strictly: unknown keys and wrong types
// are errors naming filename:line:col. The k8s type's json tags name the
// keys (goccy/go-yaml falls back to them); tolerance is a Kubernetes
// quantity ("0.05", "50m"). It does not validate values: Policy.Validate
// does, naming behavior.scaleUp/scaleDown fields.
func DecodeBehavior(data []byte, filename string) (autoscalingv2.HorizontalPodAutoscalerBehavior, error) {
	opts := []yaml.DecodeOption{yaml.DisallowUnknownField(), yaml.UseJSONUnmarshaler()}
	var b autoscalingv2.HorizontalPodAutoscalerBehavior
	var err error
	if wrappedBehavior.Match(data) {
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
	return b, nil
}

// yamlError prefixes a goccy error with filename:line:col.
func yamlError(filename string, err error) error {
	var ye yaml.Error
	if errors.As(err, &ye) && ye.GetToken() != nil {
		pos := ye.GetToken().Position
		return fmt.Errorf("%s:%d:%d: %s (allowed: the autoscaling/v2 HorizontalPodAutoscalerBehavior keys scaleUp, scaleDown with stabilizationWindowSeconds, selectPolicy, policies[type, value, periodSeconds], tolerance)", filename, pos.Line, pos.Column, ye.GetMessage())
	}
	return fmt.Errorf("%s: %w", filename, err)
}
