package kube

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
)

// conformancePool is the Gateway API Inference Extension's conformance
// pool (conformance/resources/base.yaml at 84436a96b9e6, "Secondary
// InferencePool"), with a status as a gateway writes it
// (api/v1/inferencepool_types.go: parents' Accepted and ResolvedRefs).
const conformancePool = `
apiVersion: inference.networking.k8s.io/v1
kind: InferencePool
metadata:
  name: secondary-inference-pool
  namespace: inference-conformance-app-backend
spec:
  selector:
    matchLabels:
      app: secondary-inference-model-server
  targetPorts:
    - number: 3000
  endpointPickerRef:
    name: secondary-endpoint-picker-svc
    failureMode: FailOpen
    port:
      number: 9002
status:
  parents:
  - parentRef: {name: gw, namespace: inference-conformance-infra}
    conditions:
    - {type: Accepted, status: "True", reason: Accepted, message: ok, lastTransitionTime: "2026-01-01T00:00:00Z", observedGeneration: 1}
    - {type: ResolvedRefs, status: "False", reason: InvalidExtensionRef, message: "Service not found", lastTransitionTime: "2026-01-01T00:00:00Z", observedGeneration: 1}
`

// TestPoolOf decodes a pool as the API serves it: the selector, the one
// target port, the EPP Service (kind and group defaulted as the CRD
// defaults them) and the parent condition that is not True.
func TestPoolOf(t *testing.T) {
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal([]byte(conformancePool), &u.Object); err != nil {
		t.Fatal(err)
	}
	p, err := poolOf(Pool{Namespace: "inference-conformance-app-backend", Name: "secondary-inference-pool"}, u)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Selector.String(); got != "app=secondary-inference-model-server" {
		t.Errorf("selector %q", got)
	}
	if !reflect.DeepEqual(p.TargetPorts, []int32{3000}) {
		t.Errorf("target ports %v, want [3000]", p.TargetPorts)
	}
	if want := (EPPRef{Kind: "Service", Name: "secondary-endpoint-picker-svc", Port: 9002}); p.EPP == nil || *p.EPP != want {
		t.Errorf("EPP %+v, want %+v", p.EPP, want)
	}
	if want := []string{"Gateway gw: ResolvedRefs=False (InvalidExtensionRef: Service not found)"}; !reflect.DeepEqual(p.Problems, want) {
		t.Errorf("problems %q, want %q", p.Problems, want)
	}
	if n, err := PoolPort(p); n != 3000 || err != nil || p.AppProtocol != "http" {
		t.Errorf("PoolPort %d %v (appProtocol %q), want 3000 (http, the CRD's default)", n, err, p.AppProtocol)
	}
	// A gRPC pool (llm-d-router's vllm gpu-grpc-deployment: vLLM's gRPC
	// server on port 8000) has no /metrics on its target port.
	_ = unstructured.SetNestedField(u.Object, "kubernetes.io/h2c", "spec", "appProtocol")
	if g, err := poolOf(p, u); err != nil {
		t.Fatal(err)
	} else if _, err := PoolPort(g); err == nil || !strings.Contains(err.Error(), "appProtocol kubernetes.io/h2c on its target ports [3000] (gRPC, no /metrics): give scrape: {port: N}") {
		t.Errorf("PoolPort of a gRPC pool: %v", err)
	}

	// A selector with no labels, or a spec that is not a pool's.
	unstructured.RemoveNestedField(u.Object, "spec", "selector", "matchLabels")
	if _, err := poolOf(p, u); !errors.Is(err, ErrPoolSelector) || PoolReason(err) != "no_selector" {
		t.Errorf("no matchLabels: %v (%s), want ErrPoolSelector, no_selector", err, PoolReason(err))
	}
	_ = unstructured.SetNestedField(u.Object, "many", "spec", "targetPorts")
	if _, err := poolOf(p, u); !errors.Is(err, ErrPoolData) || PoolReason(err) != "bad_data" {
		t.Errorf("targetPorts a string: %v, want ErrPoolData", err)
	}
}
