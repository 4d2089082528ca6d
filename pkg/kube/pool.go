package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// InferencePools is the resource of the Gateway API Inference Extension's
// InferencePool (kubernetes-sigs/gateway-api-inference-extension,
// api/v1/inferencepool_types.go). It is read as unstructured through the
// dynamic client: the module that holds its Go types requires Envoy's
// control plane, gRPC and controller-runtime, too heavy for the three
// fields infscale reads.
var InferencePools = schema.GroupVersionResource{Group: "inference.networking.k8s.io", Version: "v1", Resource: "inferencepools"}

// Errors of InferencePool and EPPPods, wrapped with the pool's name; serve
// reports each as a read error of that reason (Pool.Reason).
var (
	// ErrPoolSelector: spec.selector.matchLabels is empty (the CRD
	// requires one; an empty selector would match every pod).
	ErrPoolSelector = errors.New("spec.selector.matchLabels is empty: the pool selects no pod")
	// ErrNoEPP: spec.endpointPickerRef is absent, not a core Service
	// (ExternalName included, which the API forbids implementations to
	// follow), or its Service selects no pods.
	ErrNoEPP = errors.New("no Endpoint Picker to read")
	// ErrPoolData: the object does not decode as an InferencePool v1.
	ErrPoolData = errors.New("not a valid InferencePool")
)

// PoolReason is the infscale_query_errors_total reason of an error of
// InferencePool or EPPPods: no_selector, no_epp, bad_data, else Reason's
// (not_found, forbidden, ...).
func PoolReason(err error) string {
	switch {
	case errors.Is(err, ErrPoolSelector):
		return "no_selector"
	case errors.Is(err, ErrNoEPP):
		return "no_epp"
	case errors.Is(err, ErrPoolData):
		return "bad_data"
	}
	return Reason(err)
}

// Pool is an InferencePool as read: what selects its model-server pods,
// where they serve, and its Endpoint Picker.
type Pool struct {
	// Namespace and Name name the pool (its pods and its EPP Service live
	// in the same namespace: the pool selects pods of its own only).
	Namespace, Name string
	// Selector is spec.selector.matchLabels, never empty.
	Selector labels.Selector
	// TargetPorts are spec.targetPorts' numbers: the ports of each pod the
	// EPP routes to (one endpoint per pod and port).
	TargetPorts []int32
	// AppProtocol is spec.appProtocol: "http" (the default) or
	// "kubernetes.io/h2c" (gRPC model servers, whose target ports serve no
	// /metrics).
	AppProtocol string
	// EPP is spec.endpointPickerRef; nil when the pool has none.
	EPP *EPPRef
	// Problems are the status conditions of a parent (a Gateway) that are
	// not True: "Accepted" or "ResolvedRefs" False or Unknown, each as
	// "<parent kind> <name>: <type>=<status> (<reason>: <message>)". The
	// pods and EPP still serve; traffic may not reach them.
	Problems []string
}

// String is "InferencePool namespace/name".
func (p Pool) String() string { return "InferencePool " + p.Namespace + "/" + p.Name }

// EPPRef is an InferencePool's spec.endpointPickerRef.
type EPPRef struct {
	// Group and Kind are the referent's ("" and Service by default).
	Group, Kind string
	// Name is the referent's name (a Service in the pool's namespace).
	Name string
	// Port is the Service port the gateway sends ext-proc (gRPC) to, 9002
	// in llm-d; not the EPP's metrics port.
	Port int32
}

// poolObject mirrors the fields of InferencePool v1 that infscale reads
// (json names as in api/v1/inferencepool_types.go and shared_types.go).
type poolObject struct {
	Spec struct {
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		TargetPorts []struct {
			Number int32 `json:"number"`
		} `json:"targetPorts"`
		AppProtocol       string `json:"appProtocol"`
		EndpointPickerRef *struct {
			Group *string `json:"group"`
			Kind  string  `json:"kind"`
			Name  string  `json:"name"`
			Port  *struct {
				Number int32 `json:"number"`
			} `json:"port"`
		} `json:"endpointPickerRef"`
	} `json:"spec"`
	Status struct {
		Parents []struct {
			Conditions []metav1.Condition `json:"conditions"`
			ParentRef  struct {
				Kind string `json:"kind"`
				Name string `json:"name"`
			} `json:"parentRef"`
		} `json:"parents"`
	} `json:"status"`
}

// InferencePool reads the InferencePool ns/name (one GET through the
// dynamic client, bounded by RequestTimeout; ns "" is the Cluster's). The
// error names the pool and wraps the API's (apierrors.IsNotFound: the pool,
// or its CRD, does not exist), ErrPoolSelector or ErrPoolData.
func (c *Cluster) InferencePool(ctx context.Context, ns, name string) (Pool, error) {
	ns = c.resolve(Ref{Namespace: ns}).Namespace
	p := Pool{Namespace: ns, Name: name}
	if c.Dynamic == nil {
		return p, fmt.Errorf("%s: no dynamic client", p)
	}
	rctx, cancel := c.bound(ctx)
	defer cancel()
	u, err := c.Dynamic.Resource(InferencePools).Namespace(ns).Get(rctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return p, fmt.Errorf("%s: not found (check inferencePoolRef's name and the target's namespace, and that the InferencePool CRD %s is installed): %w", p, InferencePools.GroupVersion(), err)
	}
	if err != nil {
		return p, fmt.Errorf("%s: %w", p, err)
	}
	return poolOf(p, u)
}

// poolOf decodes u as the pool p names (p's namespace and name kept).
func poolOf(p Pool, u *unstructured.Unstructured) (Pool, error) {
	p = Pool{Namespace: p.Namespace, Name: p.Name}
	var o poolObject
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &o); err != nil {
		return p, fmt.Errorf("%s: %w: %v", p, ErrPoolData, err)
	}
	if len(o.Spec.Selector.MatchLabels) == 0 {
		return p, fmt.Errorf("%s: %w", p, ErrPoolSelector)
	}
	sel, err := labels.ValidatedSelectorFromSet(o.Spec.Selector.MatchLabels)
	if err != nil {
		return p, fmt.Errorf("%s: %w: spec.selector.matchLabels: %v", p, ErrPoolData, err)
	}
	p.Selector = sel
	for _, tp := range o.Spec.TargetPorts {
		p.TargetPorts = append(p.TargetPorts, tp.Number)
	}
	p.AppProtocol = o.Spec.AppProtocol
	if p.AppProtocol == "" {
		p.AppProtocol = "http"
	}
	if r := o.Spec.EndpointPickerRef; r != nil {
		e := &EPPRef{Kind: r.Kind, Name: r.Name}
		if r.Group != nil {
			e.Group = *r.Group
		}
		if e.Kind == "" {
			e.Kind = "Service"
		}
		if r.Port != nil {
			e.Port = r.Port.Number
		}
		p.EPP = e
	}
	for _, par := range o.Status.Parents {
		kind := par.ParentRef.Kind
		if kind == "" {
			kind = "Gateway"
		}
		for _, cond := range par.Conditions {
			if (cond.Type == "Accepted" || cond.Type == "ResolvedRefs") && cond.Status != metav1.ConditionTrue {
				p.Problems = append(p.Problems, fmt.Sprintf("%s %s: %s=%s (%s: %s)", kind, par.ParentRef.Name, cond.Type, cond.Status, cond.Reason, cond.Message))
			}
		}
	}
	return p, nil
}

// PoolPods are the Ready pods of the pool that belong to w (both
// selectors: the pool's pods the workload runs; w without a selector: the
// pool's alone), with their URLs as WorkloadPods gives them. When w has
// pods and none is in the pool, the error says so (a wrong selector or
// scaleTargetRef) rather than reading nothing as an idle pool.
func (c *Cluster) PoolPods(ctx context.Context, p Pool, w Workload, url func(*corev1.Pod) (string, error)) (WorkloadPods, error) {
	sel := p.Selector
	if w.Selector != nil {
		reqs, _ := w.Selector.Requirements()
		sel = sel.Add(reqs...)
	}
	out, err := c.ReadyPods(ctx, p.Namespace, sel, url)
	if err != nil || w.Selector == nil || len(out.Ready)+out.Starting > 0 || out.URLErr != nil {
		return out, err
	}
	own, err := c.Pods(ctx, p.Namespace, w.Selector)
	if err != nil {
		return out, err
	}
	if len(own) > 0 {
		return out, fmt.Errorf("none of %s's %d pods (%s) is in %s (selector %s): inferencePoolRef or scaleTargetRef names the wrong object: %w", w.Ref, len(own), w.Selector, p, p.Selector, ErrNotInPool)
	}
	return out, nil
}

// ErrNotInPool is PoolPods' error when the workload's pods are not the
// pool's.
var ErrNotInPool = errors.New("not in the pool")

// EPPPods are the Ready pods behind the pool's Endpoint Picker Service
// (its spec.selector, from the pod informer), each with url's URL: every
// EPP replica is read on its own (a scrape of the Service's ClusterIP
// would land on a different replica each time, mixing their counters).
// The error wraps ErrNoEPP (no endpointPickerRef, not a Service, an
// ExternalName Service or one without a selector) or the API's (the
// Service missing: IsNotFound).
func (c *Cluster) EPPPods(ctx context.Context, p Pool, url func(*corev1.Pod) (string, error)) (WorkloadPods, error) {
	var out WorkloadPods
	e := p.EPP
	switch {
	case e == nil:
		return out, fmt.Errorf("%s: %w: it has no spec.endpointPickerRef (read the pool's pods with server: vllm, or add the EPP)", p, ErrNoEPP)
	case e.Group != "" || e.Kind != "Service":
		return out, fmt.Errorf("%s: %w: spec.endpointPickerRef is %s %q in group %q; only a core Service is followed", p, ErrNoEPP, e.Kind, e.Name, e.Group)
	}
	rctx, cancel := c.bound(ctx)
	defer cancel()
	svc, err := c.Client.CoreV1().Services(p.Namespace).Get(rctx, e.Name, metav1.GetOptions{})
	if err != nil {
		return out, fmt.Errorf("%s: its Endpoint Picker Service %s: %w", p, e.Name, err)
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName || len(svc.Spec.Selector) == 0 {
		return out, fmt.Errorf("%s: %w: Service %s/%s has no pod selector (type %s): its pods cannot be found", p, ErrNoEPP, p.Namespace, e.Name, svc.Spec.Type)
	}
	return c.ReadyPods(ctx, p.Namespace, labels.SelectorFromSet(svc.Spec.Selector), url)
}

// PoolPort is the port to scrape a pool's model server on when none is
// given: its one target port. The error lists them when there are several
// (each is an endpoint of its own: name one with scrape: {port}), and
// refuses a gRPC pool's (appProtocol kubernetes.io/h2c: no /metrics there).
func PoolPort(p Pool) (int32, error) {
	if p.AppProtocol != "" && p.AppProtocol != "http" {
		return 0, fmt.Errorf("%s serves appProtocol %s on its target ports %v (gRPC, no /metrics): give scrape: {port: N}, the model server's HTTP metrics port", p, p.AppProtocol, p.TargetPorts)
	}
	if len(p.TargetPorts) == 1 && p.TargetPorts[0] > 0 {
		return p.TargetPorts[0], nil
	}
	ports := make([]string, len(p.TargetPorts))
	for i, n := range p.TargetPorts {
		ports[i] = fmt.Sprint(n)
	}
	slices.Sort(ports)
	return 0, fmt.Errorf("%s has %d spec.targetPorts [%s]: give scrape: {port: N}, the port whose /metrics to read", p, len(p.TargetPorts), strings.Join(ports, " "))
}
