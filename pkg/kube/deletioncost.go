package kube

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

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
// many were patched and, when some were not, a *CostError. A refusal by
// RBAC or authentication ends the patches (the others, in the same
// namespace, would be refused alike), as does an API server shedding load
// (429, 503: the others would add to it) and ctx's end; a 403 of an
// admission webhook or policy (its rule may be the pod's own) does not.
// RBAC: pods patch in namespace.
func SetDeletionCosts(ctx context.Context, client kubernetes.Interface, namespace string, patches []CostPatch) (int, error) {
	ce := &CostError{Namespace: namespace, Planned: len(patches)}
	done := 0
	for i, c := range patches {
		if err := fence(ctx); err != nil { // ended, or the Lease lost
			if ce.First == nil {
				ce.First = err
			}
			ce.NotTried = len(patches) - i
			break
		}
		_, err := client.CoreV1().Pods(namespace).Patch(ctx, c.Pod, types.MergePatchType, costPatch(c.To), metav1.PatchOptions{FieldManager: "infscale"})
		switch {
		case err == nil:
			done++
			continue
		case apierrors.IsNotFound(err):
			continue
		}
		ce.Failed++
		if ce.First == nil {
			ce.First, ce.Pod, ce.To = err, c.Pod, c.To
		}
		if rbacRefusal(err) || apierrors.IsUnauthorized(err) || shedding(err) {
			ce.NotTried = len(patches) - i - 1
			break
		}
	}
	if ce.First == nil {
		return done, nil
	}
	return done, ce
}

// CostError is SetDeletionCosts's failure, one line whatever the number
// of pods: how many patches were not made and the first failure as the
// example (kube.Reason reads it through Unwrap), with the RBAC rule to add
// when it was a refusal.
type CostError struct {
	Namespace string
	// Planned patches; Failed of them failed, NotTried were not sent (after
	// a refusal by RBAC or authentication, a 429 or 503, or ctx's end).
	Planned, Failed, NotTried int
	// First is the first failure, of the patch of Pod to To ("" when it is
	// ctx's end before any patch failed).
	First error
	Pod   string
	To    int32
}

func (e *CostError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d of %d pod-deletion-cost patches not made (%d failed, %d not tried), e.g. ", e.Failed+e.NotTried, e.Planned, e.Failed, e.NotTried)
	if e.Pod != "" {
		fmt.Fprintf(&b, "pod %s/%s: set %s=%d: ", e.Namespace, e.Pod, corev1.PodDeletionCost, e.To)
	}
	b.WriteString(e.First.Error())
	if rbacRefusal(e.First) {
		fmt.Fprintf(&b, "; RBAC: allow verb patch on resource pods (core group) in namespace %s to infscale's service account (the chart's rbac.modes: [deletion-cost])", e.Namespace)
	}
	return b.String()
}

func (e *CostError) Unwrap() error { return e.First }

// shedding reports an API server refusing requests for its load (API
// Priority and Fairness's 429, a 503), not for the one pod.
func shedding(err error) bool {
	return apierrors.IsTooManyRequests(err) || apierrors.IsServiceUnavailable(err)
}

// rbacRefusal reports whether err is the API server's authorizer refusing
// the patch ("User ... cannot patch resource \"pods\" ...": RBAC), not an
// admission webhook or policy answering 403 Forbidden too ("admission
// webhook ... denied the request"), whose fix is not an RBAC rule.
func rbacRefusal(err error) bool {
	return apierrors.IsForbidden(err) && strings.Contains(err.Error(), " cannot patch resource ")
}
