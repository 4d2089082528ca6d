package kube

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// DefaultMaxCostPatches bounds the pod patches of one target per cycle:
// a workload larger than this converges over several cycles, the largest
// corrections first.
const DefaultMaxCostPatches = 50

// DeletionCost is the controller.kubernetes.io/pod-deletion-cost value for
// a pod with outstanding requests (running + waiting): the count rounded
// to the nearest integer and clamped to the annotation's int32 range, so
// the cost rises with the requests a deletion would cut off. NaN (unknown)
// and negative counts are 0, the cost of a pod without the annotation.
func DeletionCost(outstanding float64) int32 {
	switch {
	case math.IsNaN(outstanding) || outstanding <= 0:
		return 0
	case outstanding >= math.MaxInt32:
		return math.MaxInt32
	}
	return int32(math.Round(outstanding))
}

// CostPatch is one pod whose annotation is to change.
type CostPatch struct {
	// Pod is the pod's name.
	Pod string
	// From is the annotation's current value ("" when absent); To the new.
	From string
	To   int32
}

// PlanDeletionCosts returns the patches that make every pod's
// controller.kubernetes.io/pod-deletion-cost equal DeletionCost of its
// outstanding requests (pod name → running + waiting), at most max (0:
// DefaultMaxCostPatches), and how many more were due. Pods whose value is
// already right (or that have none and are due 0, the default) are not
// patched; pods being deleted and pods absent from
// outstanding (not read this cycle) are left as they are. The order is the
// largest correction first (an absent or unparsable annotation counts as
// 0, as the ReplicaSet controller reads it), ties by pod name, so a bound
// hit leaves the smallest errors for the next cycle.
func PlanDeletionCosts(pods []*corev1.Pod, outstanding map[string]float64, max int) (patches []CostPatch, deferred int) {
	if max <= 0 {
		max = DefaultMaxCostPatches
	}
	for _, p := range pods {
		n, ok := outstanding[p.Name]
		if !ok || p.DeletionTimestamp != nil {
			continue
		}
		to := DeletionCost(n)
		from, has := p.Annotations[corev1.PodDeletionCost]
		if (has && from == strconv.FormatInt(int64(to), 10)) || (!has && to == 0) {
			continue // already so (no annotation is cost 0)
		}
		patches = append(patches, CostPatch{Pod: p.Name, From: from, To: to})
	}
	size := func(c CostPatch) int64 {
		v, err := strconv.ParseInt(c.From, 10, 32)
		if err != nil {
			v = 0
		}
		d := int64(c.To) - v
		if d < 0 {
			d = -d
		}
		return d
	}
	slices.SortFunc(patches, func(a, b CostPatch) int {
		if c := cmp.Compare(size(b), size(a)); c != 0 {
			return c
		}
		return cmp.Compare(a.Pod, b.Pod)
	})
	if len(patches) > max {
		deferred = len(patches) - max
		patches = patches[:max]
	}
	return patches, deferred
}

// costPatch is the JSON merge patch (RFC 7386) of one pod's annotation.
func costPatch(v int32) []byte {
	b, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
		corev1.PodDeletionCost: strconv.FormatInt(int64(v), 10)}}})
	return b
}

// SetDeletionCosts applies patches to the pods in namespace, one merge
// patch of metadata.annotations each (the pods' other fields untouched, no
// read first). A pod gone meanwhile (NotFound) is skipped. It returns how
// many were patched and the other errors joined; it stops early only when
// ctx ends. RBAC: pods patch in namespace.
func SetDeletionCosts(ctx context.Context, client kubernetes.Interface, namespace string, patches []CostPatch) (int, error) {
	var errs []error
	done := 0
	for _, c := range patches {
		if err := ctx.Err(); err != nil {
			errs = append(errs, err)
			break
		}
		_, err := client.CoreV1().Pods(namespace).Patch(ctx, c.Pod, types.MergePatchType, costPatch(c.To), metav1.PatchOptions{FieldManager: "infscale"})
		switch {
		case err == nil:
			done++
		case apierrors.IsNotFound(err):
		default:
			errs = append(errs, fmt.Errorf("pod %s/%s: set %s=%d: %w", namespace, c.Pod, corev1.PodDeletionCost, c.To, err))
		}
	}
	return done, errors.Join(errs...)
}
