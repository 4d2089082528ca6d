package kube

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/tools/clientcmd"
)

// Ref is a workload named as an HPA's spec.scaleTargetRef names it
// (apiVersion, kind, name), in a namespace.
type Ref struct {
	// Namespace is the workload's namespace; "" is the Cluster's.
	Namespace string
	autoscalingv2.CrossVersionObjectReference
}

// String is "Kind namespace/name", as kubectl names an object.
func (r Ref) String() string { return r.Kind + " " + r.Namespace + "/" + r.Name }

// group is the API group of the reference's apiVersion: "apps" for
// apps/v1, "" for the core group's v1.
func (r Ref) group() string {
	gv, _ := schema.ParseGroupVersion(r.APIVersion)
	return gv.Group
}

// Workload is a workload's scale subresource as read.
type Workload struct {
	// Ref is the workload, its namespace resolved.
	Ref Ref
	// Resource is the group/resource whose scale was read (deployments.apps).
	Resource schema.GroupResource
	// Replicas is spec.replicas: the current replicas as the HPA reads
	// them (its currentReplicas).
	Replicas int32
	// StatusReplicas is status.replicas (the pods the controller has).
	StatusReplicas int32
	// Selector is status.selector, the label selector of its pods; nil
	// when the scale subresource publishes none.
	Selector labels.Selector
}

// Cluster reads workloads and their pods and writes replicas. Pods and
// HPAs come from shared informers, one factory per namespace, started on
// first use (a namespace no target uses is never watched); the scale
// subresource is read with one GET per call, as the HPA controller does
// every sync. Safe for concurrent use.
type Cluster struct {
	// Client is the typed clientset (pods, HPAs).
	Client kubernetes.Interface
	// Scales reads and writes the scale subresource of any resource.
	Scales scale.ScalesGetter
	// Mapper maps a reference's group and kind to its resource.
	Mapper meta.RESTMapper
	// Dynamic reads resources without Go types in this module (an
	// InferencePool, as unstructured).
	Dynamic dynamic.Interface
	// Discovery, when set, is asked whether a kind's resource serves a
	// scale subresource (its "<resource>/scale" in the group version's
	// resource list); nil (tests' fakes): not asked.
	Discovery discovery.DiscoveryInterface
	// freshDiscovery is Discovery without its cache (NewCluster's).
	freshDiscovery discovery.DiscoveryInterface
	// Namespace is the default namespace of a Ref without one.
	Namespace string
	// Config is the client configuration NewCluster was given (nil in
	// tests): the API server's URL and credentials for ProxyURL.
	Config *rest.Config
	// SyncTimeout bounds the first wait for a namespace's informer to list
	// (default 10s, and the caller's context): an informer that cannot
	// list (RBAC, the API server unreachable) fails the read with the
	// API's error instead of hanging it, and after one such failure it
	// fails at once until it has listed (it retries in the background).
	SyncTimeout time.Duration
	// RequestTimeout bounds each API read or write that is not a watch:
	// the discovery behind a kind's resource, the scale GET and Update
	// (default DefaultRequestTimeout, and the caller's context). An API
	// server that accepts connections and never answers fails the call
	// with a timeout (Reason "timeout") instead of hanging it.
	RequestTimeout time.Duration

	mapping singleflight.Group // discoveries in flight, by kind

	mu    sync.Mutex
	nss   map[string]*watched
	stop  chan struct{}
	close sync.Once
}

// DefaultRequestTimeout is Cluster.RequestTimeout's default, and the HTTP
// timeout of the discovery and scale clients NewCluster builds (their calls
// take no context, or may be given one without a deadline). The informers'
// watches have no such timeout: it would cut every watch.
const DefaultRequestTimeout = 10 * time.Second

// DefaultNamespace is the namespace kubectl would use: the kubeconfig
// context's (kubeconfig, else $KUBECONFIG or ~/.kube/config), else in a
// cluster the pod's own, else "default".
func DefaultNamespace(kubeconfig string) string {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	ns, _, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).Namespace()
	if err != nil || ns == "" {
		return "default"
	}
	return ns
}

// NewCluster builds a Cluster for cfg: a clientset, a RESTMapper from the
// API server's discovery (cached; refreshed when a kind is not found, so a
// CRD installed later resolves) and a scale client. Client-side rate
// limits default to 50 requests/s, burst 100 (client-go's 5/10 would
// throttle one scale GET per target per cycle past 75 targets at 15 s).
// Nothing is requested until first use. A dynamic client (for an
// InferencePool) shares the bounded configuration.
func NewCluster(cfg *rest.Config, namespace string) (*Cluster, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = 50, 100
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = "infscale"
	}
	client, err := NewClientset(cfg)
	if err != nil {
		return nil, err
	}
	// Discovery and the scale subresource are plain requests: a copy of
	// the config with an HTTP timeout (client-go's RESTMapper calls take
	// no context). The clientset's informers watch, so it has none.
	bounded := rest.CopyConfig(cfg)
	if bounded.Timeout == 0 {
		bounded.Timeout = DefaultRequestTimeout
	}
	dc, err := discovery.NewDiscoveryClientForConfig(bounded)
	if err != nil {
		return nil, err
	}
	disco := memory.NewMemCacheClient(dc)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(disco)
	// NewForConfig sets the serializer of the config it is given: a copy.
	scales, err := scale.NewForConfig(rest.CopyConfig(bounded), mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(disco))
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(rest.CopyConfig(bounded))
	if err != nil {
		return nil, err
	}
	return &Cluster{Client: client, Scales: scales, Mapper: mapper, Dynamic: dyn, Discovery: disco, freshDiscovery: dc, Namespace: namespace, Config: cfg}, nil
}

// Close stops the informers.
func (c *Cluster) Close() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stop != nil {
		c.close.Do(func() { close(c.stop) })
	}
}

// resolve fills the default namespace.
func (c *Cluster) resolve(ref Ref) Ref {
	if ref.Namespace == "" {
		ref.Namespace = c.Namespace
	}
	if ref.Namespace == "" {
		ref.Namespace = metav1.NamespaceDefault
	}
	return ref
}

// bound is ctx limited to one RequestTimeout.
func (c *Cluster) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	d := c.RequestTimeout
	if d <= 0 {
		d = DefaultRequestTimeout
	}
	return context.WithTimeout(ctx, d)
}

// resource maps ref's group and kind to the resource whose scale
// subresource names it (Deployment apps/v1: deployments.apps). The mapper's
// discovery takes no context: it runs aside, and the call returns when ctx
// ends or RequestTimeout passes (the discovery itself ends at its HTTP
// timeout).
func (c *Cluster) resource(ctx context.Context, ref Ref) (schema.GroupResource, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return schema.GroupResource{}, fmt.Errorf("%s: apiVersion %q: %w", ref, ref.APIVersion, err)
	}
	// One discovery per kind in flight, shared by the targets that wait.
	gk := schema.GroupKind{Group: gv.Group, Kind: ref.Kind}
	call := c.mapping.DoChan(gk.WithVersion(gv.Version).String(), func() (any, error) {
		m, err := c.Mapper.RESTMapping(gk, gv.Version)
		if err == nil {
			err = c.checkScale(m.Resource, ref.Kind)
		}
		return m, err
	})
	ctx, cancel := c.bound(ctx)
	defer cancel()
	var m *meta.RESTMapping
	select {
	case r := <-call:
		err = r.Err
		if err == nil {
			m = r.Val.(*meta.RESTMapping)
		}
	case <-ctx.Done():
		err = ctx.Err()
	}
	var ns *NoScaleError
	if errors.As(err, &ns) {
		return schema.GroupResource{}, fmt.Errorf("%s: %w", ref, err)
	}
	if meta.IsNoMatchError(err) {
		return schema.GroupResource{}, fmt.Errorf("%s: no resource of kind %s in %s (a typo in kind or apiVersion, or its CRD is not installed): %w", ref, ref.Kind, ref.APIVersion, err)
	}
	if err != nil {
		return schema.GroupResource{}, fmt.Errorf("%s: the API server's discovery (to map kind %s in %s to its resource) failed: %w", ref, ref.Kind, ref.APIVersion, err)
	}
	return m.Resource.GroupResource(), nil
}

// NoScaleError is a scaleTargetRef whose kind exists but serves no scale
// subresource (a Job, a Service, an InferencePool, a CRD without
// subresources.scale): the object may well exist, it has no replicas to
// read or write. Reason "no_scale".
type NoScaleError struct {
	// Resource is the kind's resource (jobs.batch).
	Resource schema.GroupVersionResource
	// Kind is the scaleTargetRef's kind.
	Kind string
}

func (e *NoScaleError) Error() string {
	msg := fmt.Sprintf("%s has no scale subresource (%s/scale is not served by %s): scaleTargetRef names the workload that runs the pods and has one (a Deployment, StatefulSet, Argo Rollout, LeaderWorkerSet, or a CRD with subresources.scale)",
		e.Resource.GroupResource(), e.Resource.Resource, e.Resource.GroupVersion())
	if e.Kind == "InferencePool" {
		msg += "; an InferencePool is named in inferencePoolRef, the Deployment behind it in scaleTargetRef"
	}
	return msg
}

// checkScale returns a *NoScaleError when discovery lists gvr's group
// version without "<resource>/scale". A negative answer of the cache is
// asked again of the API server (one request: a CRD given a scale
// subresource since); a discovery that fails says nothing (the scale
// request then fails with its own error).
func (c *Cluster) checkScale(gvr schema.GroupVersionResource, kind string) error {
	if c.Discovery == nil {
		return nil
	}
	has := func(d discovery.DiscoveryInterface) bool {
		l, err := d.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
		return err != nil || slices.ContainsFunc(l.APIResources, func(r metav1.APIResource) bool { return r.Name == gvr.Resource+"/scale" })
	}
	if has(c.Discovery) || (c.freshDiscovery != nil && has(c.freshDiscovery)) {
		return nil
	}
	return &NoScaleError{Resource: gvr, Kind: kind}
}
