package kube

import (
	"context"
	"errors"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

// ErrNoSelector is WorkloadPods' error for a scale subresource without
// status.selector (a custom resource that does not publish one); it says
// what to change, as the HPA needs the same field.
var ErrNoSelector = errors.New("its scale subresource has no status.selector: its pods cannot be found (its CRD's scale subresource needs labelSelectorPath, a field its controller fills with the pods' label selector, as the HPA needs too)")

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
	if w.Selector == nil {
		return WorkloadPods{}, fmt.Errorf("%s: %w", w.Ref, ErrNoSelector)
	}
	return c.ReadyPods(ctx, w.Ref.Namespace, w.Selector, url)
}

// ReadyPods lists the pods of ns matching sel (Pods) and splits them as
// WorkloadPods does: Ready pods with their url, and the starting ones.
func (c *Cluster) ReadyPods(ctx context.Context, ns string, sel labels.Selector, url func(*corev1.Pod) (string, error)) (WorkloadPods, error) {
	var out WorkloadPods
	pods, err := c.Pods(ctx, ns, sel)
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
		e := &PortError{Pod: p.Namespace + "/" + p.Name, Flag: "scrape: {port: N}"}
		if port.Type == intstr.String {
			e.Named = port.StrVal
		}
		for _, cp := range declared {
			e.Declared = append(e.Declared, fmt.Sprintf("%s:%d", cp.Name, cp.ContainerPort))
		}
		return 0, e
	}
	return n, nil
}

// PortError is PodURL's error: the pod declares no container port of
// that name, or, with no port asked for, not exactly one.
type PortError struct {
	// Pod is namespace/name.
	Pod string
	// Named is the container port name asked for ("" when none was).
	Named string
	// Declared are the pod's container ports as name:number.
	Declared []string
	// Flag is the key or flag that names the port (serve's scrape: {port:
	// N}; `infscale kube`'s --port), said in the message.
	Flag string
}

func (e *PortError) Error() string {
	if e.Named != "" {
		return fmt.Sprintf("pod %s: no container port named %q (it declares %v)", e.Pod, e.Named, e.Declared)
	}
	return fmt.Sprintf("pod %s: give %s: it declares %d container ports %v", e.Pod, e.Flag, len(e.Declared), e.Declared)
}
