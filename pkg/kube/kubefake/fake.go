// Package kubefake (a test harness) builds a kube.Cluster on client-go's fakes for tests:
// the fake clientset (pods, HPAs, Services, watched by the real informers),
// a fake dynamic client (InferencePools, Pool) and an
// in-memory scale subresource that keeps a resourceVersion and answers a
// stale update with a conflict, as the API server does.
package kubefake

import (
	"strconv"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	fakescale "k8s.io/client-go/scale/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/infscale/infscale/pkg/kube"
)

// Scales is the scale subresource of the fake cluster's workloads, keyed
// by namespace/resource/name (resource as deployments.apps).
type Scales struct {
	mu    sync.Mutex
	items map[string]*autoscalingv1.Scale
	// Gets and Updates count the calls; Written are the spec.replicas of
	// the updates that succeeded, in order.
	Gets, Updates int
	Written       []int32
	// BeforeUpdate, when set, runs before each update is checked (a test
	// changes the stored scale here: another writer between read and write).
	BeforeUpdate func(s *Scales, n int)
	// Err, when set, answers every call of a verb ("get", "update").
	Err map[string]error
}

// Set stores a workload's scale: spec replicas and status.selector.
func (s *Scales) Set(ns string, gr schema.GroupResource, name string, replicas int32, selector string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.setLocked(ns, gr, name, replicas, selector)
}

func (s *Scales) setLocked(ns string, gr schema.GroupResource, name string, replicas int32, selector string) {
	k := ns + "/" + gr.String() + "/" + name
	rv := 1
	if old := s.items[k]; old != nil {
		rv, _ = strconv.Atoi(old.ResourceVersion)
		rv++
		if selector == "" {
			selector = old.Status.Selector
		}
	}
	s.items[k] = &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: strconv.Itoa(rv)},
		Spec:       autoscalingv1.ScaleSpec{Replicas: replicas},
		Status:     autoscalingv1.ScaleStatus{Replicas: replicas, Selector: selector},
	}
}

// SetLocked is Set for BeforeUpdate, which runs with the store locked.
func (s *Scales) SetLocked(ns string, gr schema.GroupResource, name string, replicas int32) {
	s.setLocked(ns, gr, name, replicas, "")
}

// Replicas is a workload's stored spec.replicas (-1: none).
func (s *Scales) Replicas(ns string, gr schema.GroupResource, name string) int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	if sc := s.items[ns+"/"+gr.String()+"/"+name]; sc != nil {
		return sc.Spec.Replicas
	}
	return -1
}

// Deployments is the group/resource of apps/v1 Deployments.
var Deployments = schema.GroupResource{Group: "apps", Resource: "deployments"}

// New returns a Cluster whose default namespace is ns, its clientset
// holding objects, its mapper knowing Deployments, StatefulSets and
// argoproj.io/v1alpha1 Rollouts, and its scale subresource in the
// returned Scales.
func New(ns string, objects ...runtime.Object) (*kube.Cluster, *fake.Clientset, *Scales) {
	client := fake.NewClientset(objects...)
	mapper := meta.NewDefaultRESTMapper(nil)
	mapper.Add(appsv1.SchemeGroupVersion.WithKind("Deployment"), meta.RESTScopeNamespace)
	mapper.Add(appsv1.SchemeGroupVersion.WithKind("StatefulSet"), meta.RESTScopeNamespace)
	mapper.Add(schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Rollout"}, meta.RESTScopeNamespace)
	st := &Scales{items: map[string]*autoscalingv1.Scale{}}
	fs := &fakescale.FakeScaleClient{}
	fs.AddReactor("get", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		g := a.(k8stesting.GetAction)
		st.mu.Lock()
		defer st.mu.Unlock()
		st.Gets++
		if err := st.Err["get"]; err != nil {
			return true, nil, err
		}
		gr := g.GetResource().GroupResource()
		sc := st.items[g.GetNamespace()+"/"+gr.String()+"/"+g.GetName()]
		if sc == nil {
			return true, nil, apierrors.NewNotFound(gr, g.GetName())
		}
		return true, sc.DeepCopy(), nil
	})
	fs.AddReactor("update", "*", func(a k8stesting.Action) (bool, runtime.Object, error) {
		u := a.(k8stesting.UpdateAction)
		in := u.GetObject().(*autoscalingv1.Scale)
		st.mu.Lock()
		defer st.mu.Unlock()
		st.Updates++
		if err := st.Err["update"]; err != nil {
			return true, nil, err
		}
		if st.BeforeUpdate != nil {
			st.BeforeUpdate(st, st.Updates)
		}
		gr := u.GetResource().GroupResource()
		k := u.GetNamespace() + "/" + gr.String() + "/" + in.Name
		cur := st.items[k]
		if cur == nil {
			return true, nil, apierrors.NewNotFound(gr, in.Name)
		}
		if in.ResourceVersion != cur.ResourceVersion {
			return true, nil, apierrors.NewConflict(gr, in.Name, errStale)
		}
		st.setLocked(u.GetNamespace(), gr, in.Name, in.Spec.Replicas, "")
		st.Written = append(st.Written, in.Spec.Replicas)
		return true, st.items[k].DeepCopy(), nil
	})
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{kube.InferencePools: "InferencePoolList"})
	c := &kube.Cluster{Client: client, Scales: fs, Mapper: mapper, Dynamic: dyn, Namespace: ns}
	return c, client, st
}

// Pool is an InferencePool (inference.networking.k8s.io/v1) as the API
// server stores one, for the Cluster's Dynamic client: its selector's
// matchLabels, targetPorts, and an endpointPickerRef to Service epp on
// port 9002 when epp is not "".
func Pool(ns, name string, matchLabels map[string]string, ports []int64, epp string) *unstructured.Unstructured {
	ml := map[string]any{}
	for k, v := range matchLabels {
		ml[k] = v
	}
	tps := make([]any, len(ports))
	for i, n := range ports {
		tps[i] = map[string]any{"number": n}
	}
	spec := map[string]any{"selector": map[string]any{"matchLabels": ml}, "targetPorts": tps}
	if epp != "" {
		spec["endpointPickerRef"] = map[string]any{"name": epp, "port": map[string]any{"number": int64(9002)}}
	}
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": kube.InferencePools.GroupVersion().String(),
		"kind":       "InferencePool",
		"metadata":   map[string]any{"namespace": ns, "name": name},
		"spec":       spec,
	}}
}

type staleError struct{}

func (staleError) Error() string {
	return "the object has been modified; please apply your changes to the latest version and try again"
}

var errStale = staleError{}
