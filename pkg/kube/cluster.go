package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/singleflight"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/util/retry"
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

// watched is one namespace's informer factory and what was asked of it.
type watched struct {
	factory informers.SharedInformerFactory
	pods    cache.SharedIndexInformer
	hpas    cache.SharedIndexInformer
	mu      sync.Mutex
	lastErr error           // the last list/watch error of an informer
	failed  map[string]bool // informers that did not list in time once
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
// Nothing is requested until first use.
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
	return &Cluster{Client: client, Scales: scales, Mapper: mapper, Namespace: namespace, Config: cfg}, nil
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
		return c.Mapper.RESTMapping(gk, gv.Version)
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
	if meta.IsNoMatchError(err) {
		return schema.GroupResource{}, fmt.Errorf("%s: no resource of kind %s in %s (a typo in kind or apiVersion, or its CRD is not installed): %w", ref, ref.Kind, ref.APIVersion, err)
	}
	if err != nil {
		return schema.GroupResource{}, fmt.Errorf("%s: the API server's discovery (to map kind %s in %s to its resource) failed: %w", ref, ref.Kind, ref.APIVersion, err)
	}
	return m.Resource.GroupResource(), nil
}

// Scale reads ref's scale subresource (one GET). The error names the
// workload; apierrors.IsNotFound and IsForbidden tell a missing workload
// and missing RBAC (Reason); a negative replica count is an error too.
func (c *Cluster) Scale(ctx context.Context, ref Ref) (Workload, error) {
	ref = c.resolve(ref)
	gr, err := c.resource(ctx, ref)
	if err != nil {
		return Workload{}, err
	}
	rctx, cancel := c.bound(ctx)
	defer cancel()
	s, err := c.Scales.Scales(ref.Namespace).Get(rctx, gr, ref.Name, metav1.GetOptions{})
	if err != nil {
		return Workload{}, fmt.Errorf("%s: scale: %w", ref, err)
	}
	return workloadOf(ref, gr, s)
}

// workloadOf reads a scale subresource; a negative spec.replicas or
// status.replicas (no API server validation lets one through: a broken
// aggregated API or a proxy in between) is an error, not a count to decide
// from.
func workloadOf(ref Ref, gr schema.GroupResource, s *autoscalingv1.Scale) (Workload, error) {
	w := Workload{Ref: ref, Resource: gr, Replicas: s.Spec.Replicas, StatusReplicas: s.Status.Replicas}
	if s.Spec.Replicas < 0 || s.Status.Replicas < 0 {
		return Workload{}, fmt.Errorf("%s: scale spec.replicas %d, status.replicas %d: a replica count cannot be negative; the API server's answer is not trusted, no decision", ref, s.Spec.Replicas, s.Status.Replicas)
	}
	if s.Status.Selector != "" {
		sel, err := labels.Parse(s.Status.Selector)
		if err != nil {
			return w, fmt.Errorf("%s: scale status.selector %q: %w", ref, s.Status.Selector, err)
		}
		w.Selector = sel
	}
	return w, nil
}

// SetReplicas writes replicas to ref's scale subresource (spec.replicas)
// unless it already holds them. The update carries the resourceVersion it
// read; on a conflict (another writer between the read and the write) it
// reads again and writes the same number (retry.RetryOnConflict's
// backoff: 5 tries): what was decided is not re-decided. It returns
// spec.replicas as last read before the write and whether it wrote.
func (c *Cluster) SetReplicas(ctx context.Context, ref Ref, replicas int32) (from int32, wrote bool, err error) {
	ref = c.resolve(ref)
	gr, err := c.resource(ctx, ref)
	if err != nil {
		return 0, false, err
	}
	sc := c.Scales.Scales(ref.Namespace)
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		rctx, cancel := c.bound(ctx)
		defer cancel()
		s, err := sc.Get(rctx, gr, ref.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		from, wrote = s.Spec.Replicas, false
		if s.Spec.Replicas == replicas {
			return nil
		}
		s.Spec.Replicas = replicas
		wctx, wcancel := c.bound(ctx)
		defer wcancel()
		if _, err := sc.Update(wctx, gr, s, metav1.UpdateOptions{FieldManager: "infscale"}); err != nil {
			return err
		}
		wrote = true
		return nil
	})
	if err != nil {
		return from, false, fmt.Errorf("%s: write spec.replicas %d: %w", ref, replicas, err)
	}
	return from, wrote, nil
}

// namespace returns ns's informers, creating the factory on first use.
func (c *Cluster) namespace(ns string) *watched {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.nss == nil {
		c.nss = map[string]*watched{}
		c.stop = make(chan struct{})
	}
	w := c.nss[ns]
	if w == nil {
		w = &watched{factory: informers.NewSharedInformerFactoryWithOptions(c.Client, 0, informers.WithNamespace(ns)), failed: map[string]bool{}}
		c.nss[ns] = w
	}
	return w
}

// informer starts (once) and waits for one of ns's informers: get picks it
// from the factory.
func (c *Cluster) informer(ctx context.Context, ns, what string, slot func(*watched) *cache.SharedIndexInformer, get func(informers.SharedInformerFactory) cache.SharedIndexInformer) (cache.SharedIndexInformer, error) {
	w := c.namespace(ns)
	w.mu.Lock()
	p := slot(w)
	if *p == nil {
		inf := get(w.factory)
		_ = inf.SetTransform(stripManagedFields)
		_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
			w.mu.Lock()
			w.lastErr = err
			w.mu.Unlock()
		})
		*p = inf
		w.factory.Start(c.stop)
	}
	inf := *p
	failed := w.failed[what]
	w.mu.Unlock()
	if inf.HasSynced() {
		return inf, nil
	}
	timeout := c.SyncTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	if failed {
		// It failed to list before: say so at once (it keeps retrying in
		// the background) rather than hold every cycle for the timeout.
		timeout = time.Millisecond
	}
	wctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	if !cache.WaitForCacheSync(wctx.Done(), inf.HasSynced) {
		w.mu.Lock()
		err := w.lastErr
		w.failed[what] = true
		w.mu.Unlock()
		if err == nil {
			err = wctx.Err()
		}
		return nil, fmt.Errorf("list/watch %s in namespace %s: %w", what, ns, err)
	}
	return inf, nil
}

// stripManagedFields drops what infscale never reads from cached objects.
func stripManagedFields(obj any) (any, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// ErrNoSelector is WorkloadPods' error for a scale subresource without
// status.selector (a custom resource that does not publish one).
var ErrNoSelector = errors.New("its scale subresource has no status.selector: its pods cannot be found")

// WorkloadPods are a workload's pods as the HPA counts them.
type WorkloadPods struct {
	// Ready are the Ready pods whose metrics URL could be made, by name;
	// URLs[i] is Ready[i]'s.
	Ready []*corev1.Pod
	URLs  []string
	// Starting counts the Pending pods (the HPA's unready).
	Starting int
	// URLErr is the first error of url, if any: the pods share a
	// template, so one stands for all.
	URLErr error
}

// WorkloadPods lists w's pods through its selector (Pods, from the
// informer) and splits them: Ready pods with their metrics URL (url, e.g.
// PodURL or ProxyURL), and the starting ones. The error wraps
// ErrNoSelector, or is Pods'.
func (c *Cluster) WorkloadPods(ctx context.Context, w Workload, url func(*corev1.Pod) (string, error)) (WorkloadPods, error) {
	var out WorkloadPods
	if w.Selector == nil {
		return out, fmt.Errorf("%s: %w", w.Ref, ErrNoSelector)
	}
	pods, err := c.Pods(ctx, w.Ref.Namespace, w.Selector)
	if err != nil {
		return out, err
	}
	for _, p := range pods {
		switch {
		case Ready(p):
			u, err := url(p)
			if err != nil {
				if out.URLErr == nil {
					out.URLErr = err
				}
				continue
			}
			out.Ready, out.URLs = append(out.Ready, p), append(out.URLs, u)
		case Pending(p):
			out.Starting++
		}
	}
	return out, nil
}

// Pods returns the pods of ns matching sel from the namespace's pod
// informer (a list and a watch on first use, a cache read after), sorted
// by name. A nil selector matches nothing.
func (c *Cluster) Pods(ctx context.Context, ns string, sel labels.Selector) ([]*corev1.Pod, error) {
	if ns == "" {
		ns = c.resolve(Ref{}).Namespace
	}
	if sel == nil || sel.Empty() {
		return nil, nil // an empty selector would match every pod of the namespace
	}
	inf, err := c.informer(ctx, ns, "pods", func(w *watched) *cache.SharedIndexInformer { return &w.pods },
		func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
			return f.Core().V1().Pods().Informer()
		})
	if err != nil {
		return nil, err
	}
	var out []*corev1.Pod
	for _, o := range inf.GetIndexer().List() {
		if p, ok := o.(*corev1.Pod); ok && p.Namespace == ns && sel.Matches(labels.Set(p.Labels)) {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b *corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// Ready reports whether p serves: Ready condition True, not being
// deleted, an IP assigned. A pod scaled away is deleted first, so it stops
// being Ready before it is gone.
func Ready(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.PodIP == "" || p.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// Pending reports whether p is starting (not deleted, not finished, not
// yet Ready): the HPA's unready pod.
func Pending(p *corev1.Pod) bool {
	if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		return false
	}
	return !Ready(p)
}

// PodURL is the URL of p's metrics: http://<pod IP>:<port><path>. port is
// a container port number, a container port's name, or empty (the zero
// IntOrString): the one port p's containers declare. The error says which
// ports p has.
func PodURL(p *corev1.Pod, port intstr.IntOrString, path string) (string, error) {
	n, err := podPort(p, port)
	if err != nil {
		return "", err
	}
	return "http://" + net.JoinHostPort(p.Status.PodIP, strconv.Itoa(int(n))) + path, nil
}

// ProxyURL is PodURL through the API server's pod proxy
// (<host>/api/v1/namespaces/<ns>/pods/<name>:<port>/proxy<path>), for a
// client outside the cluster network; host is the API server's URL
// (rest.Config.Host), and the request needs the client's credentials and
// get on pods/proxy.
func ProxyURL(host string, p *corev1.Pod, port intstr.IntOrString, path string) (string, error) {
	n, err := podPort(p, port)
	if err != nil {
		return "", err
	}
	if !strings.Contains(host, "://") {
		host = "https://" + host
	}
	return fmt.Sprintf("%s/api/v1/namespaces/%s/pods/%s:%d/proxy%s", strings.TrimSuffix(host, "/"), p.Namespace, p.Name, n, path), nil
}

// podPort resolves port on p (PodURL).
func podPort(p *corev1.Pod, port intstr.IntOrString) (int32, error) {
	var declared []corev1.ContainerPort
	for _, c := range p.Spec.Containers {
		declared = append(declared, c.Ports...)
	}
	n := int32(0)
	switch {
	case port.Type == intstr.Int && port.IntVal > 0:
		n = port.IntVal
	case port.Type == intstr.String:
		for _, cp := range declared {
			if cp.Name == port.StrVal {
				n = cp.ContainerPort
			}
		}
	case len(declared) == 1:
		n = declared[0].ContainerPort
	}
	if n == 0 {
		names := make([]string, len(declared))
		for i, cp := range declared {
			names[i] = fmt.Sprintf("%s:%d", cp.Name, cp.ContainerPort)
		}
		want := fmt.Sprintf("give scrape: {port: N}: it declares %d container ports %v", len(declared), names)
		if port.Type == intstr.String {
			want = fmt.Sprintf("no container port named %q (it declares %v)", port.StrVal, names)
		}
		return 0, fmt.Errorf("pod %s/%s: %s", p.Namespace, p.Name, want)
	}
	return n, nil
}

// Scaler is the controller that already scales a workload: an HPA, and
// the KEDA ScaledObject that owns it when there is one.
type Scaler struct {
	// HPA is the HorizontalPodAutoscaler's name.
	HPA string
	// ScaledObject is the name of the KEDA ScaledObject that owns the HPA
	// (ownerReferences kind ScaledObject, or the label
	// scaledobject.keda.sh/name); "" for a plain HPA.
	ScaledObject string
}

// String names the scaler as a user finds it: "ScaledObject NAME" for
// KEDA's, else "HorizontalPodAutoscaler NAME".
func (s Scaler) String() string {
	if s.ScaledObject != "" {
		return "ScaledObject " + s.ScaledObject + " (through HorizontalPodAutoscaler " + s.HPA + ")"
	}
	return "HorizontalPodAutoscaler " + s.HPA
}

// ScaledError is Applier.Apply's refusal: By, an HPA (a KEDA
// ScaledObject's included), already scales Ref.
type ScaledError struct {
	Ref Ref
	By  Scaler
}

func (e *ScaledError) Error() string {
	return fmt.Sprintf("%s is scaled by %s: not applying (two writers of spec.replicas fight); delete it or drop apply", e.Ref, e.By)
}

// FindScaler returns the first HPA of hpas (by name) whose
// spec.scaleTargetRef is ref (same API group, kind and name; the version
// may differ), and whether there is one.
func FindScaler(hpas []*autoscalingv2.HorizontalPodAutoscaler, ref Ref) (Scaler, bool) {
	var match []*autoscalingv2.HorizontalPodAutoscaler
	for _, h := range hpas {
		t := h.Spec.ScaleTargetRef
		if h.Namespace == ref.Namespace && t.Kind == ref.Kind && t.Name == ref.Name && (Ref{CrossVersionObjectReference: t}).group() == ref.group() {
			match = append(match, h)
		}
	}
	if len(match) == 0 {
		return Scaler{}, false
	}
	slices.SortFunc(match, func(a, b *autoscalingv2.HorizontalPodAutoscaler) int { return strings.Compare(a.Name, b.Name) })
	h := match[0]
	s := Scaler{HPA: h.Name, ScaledObject: h.Labels["scaledobject.keda.sh/name"]}
	for _, o := range h.OwnerReferences {
		if o.Kind == "ScaledObject" {
			s.ScaledObject = o.Name
		}
	}
	return s, true
}

// ScaledBy returns the HPA (and KEDA ScaledObject) that scales ref, from
// the namespace's HPA informer (autoscaling/v2, started on first use).
func (c *Cluster) ScaledBy(ctx context.Context, ref Ref) (Scaler, bool, error) {
	ref = c.resolve(ref)
	inf, err := c.informer(ctx, ref.Namespace, "horizontalpodautoscalers", func(w *watched) *cache.SharedIndexInformer { return &w.hpas },
		func(f informers.SharedInformerFactory) cache.SharedIndexInformer {
			return f.Autoscaling().V2().HorizontalPodAutoscalers().Informer()
		})
	if err != nil {
		return Scaler{}, false, err
	}
	var hpas []*autoscalingv2.HorizontalPodAutoscaler
	for _, o := range inf.GetIndexer().List() {
		if h, ok := o.(*autoscalingv2.HorizontalPodAutoscaler); ok {
			hpas = append(hpas, h)
		}
	}
	s, found := FindScaler(hpas, ref)
	return s, found, nil
}

// Reason classifies a Kubernetes error for infscale_query_errors_total
// and infscale_apply_errors_total: not_found, forbidden, unauthorized,
// conflict, timeout, scaled_by_hpa, scaled_by_scaledobject, not_leader,
// unavailable.
func Reason(err error) string {
	var se *ScaledError
	switch {
	case errors.As(err, &se) && se.By.ScaledObject != "":
		return "scaled_by_scaledobject"
	case errors.As(err, &se):
		return "scaled_by_hpa"
	case errors.Is(err, ErrNotLeader):
		return "not_leader"
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return "not_found"
	case apierrors.IsForbidden(err):
		return "forbidden"
	case apierrors.IsUnauthorized(err):
		return "unauthorized"
	case apierrors.IsConflict(err):
		return "conflict"
	case errors.Is(err, context.DeadlineExceeded) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || isNetTimeout(err):
		return "timeout"
	}
	return "unavailable"
}

// ErrNotLeader is Applier.Apply's answer on an instance that does not hold
// the lease: nothing was written, and that is not a failure.
var ErrNotLeader = errors.New("not the leader: another instance writes")

// isNetTimeout reports an HTTP client timeout (rest.Config.Timeout) or a
// dial timeout: a *url.Error or net.Error whose Timeout() is true.
func isNetTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
