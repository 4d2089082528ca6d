package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
)

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
	return fmt.Sprintf("%s is scaled by %s: not applying (two writers of spec.replicas fight); delete it, or stop applying (kube without --apply; apply: false on the serve target)", e.Ref, e.By)
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
