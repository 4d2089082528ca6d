package kube

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
)

// Scale reads ref's scale subresource (one GET). The error names the
// workload; apierrors.IsNotFound and IsForbidden tell a missing workload
// and missing RBAC (Reason); a negative replica count and an answer that is
// not a Scale are errors too (Reason bad_data).
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
		return Workload{}, fmt.Errorf("%s: scale: %w", ref, notScale(err, notScaleRead))
	}
	return workloadOf(ref, gr, s)
}

// workloadOf reads a scale subresource; a negative spec.replicas or
// status.replicas (no API server validation lets one through: a broken
// aggregated API or a proxy in between) is an error, not a count to decide
// from.
func workloadOf(ref Ref, gr schema.GroupResource, s *autoscalingv1.Scale) (Workload, error) {
	w := Workload{Ref: ref, Resource: gr, Replicas: s.Spec.Replicas, StatusReplicas: s.Status.Replicas}
	if err := checkCounts(ref, s); err != nil {
		return Workload{}, err
	}
	if s.Status.Selector != "" {
		sel, err := labels.Parse(s.Status.Selector)
		if err != nil {
			return w, &badScaleError{fmt.Errorf("%s: scale status.selector %q: %w", ref, s.Status.Selector, err)}
		}
		w.Selector = sel
	}
	return w, nil
}

// checkCounts refuses a scale whose spec.replicas or status.replicas is
// negative (a *badScaleError).
func checkCounts(ref Ref, s *autoscalingv1.Scale) error {
	if s.Spec.Replicas < 0 || s.Status.Replicas < 0 {
		return &badScaleError{fmt.Errorf("%s: scale spec.replicas %d, status.replicas %d: a replica count cannot be negative; the API server's answer is not trusted, no decision", ref, s.Spec.Replicas, s.Status.Replicas)}
	}
	return nil
}

// badScaleError is a scale subresource's answer that no valid API server
// gives (a negative count, an unparsable status.selector, a body that is
// not a Scale): Reason
// bad_data; nothing is decided from it or written over it.
type badScaleError struct{ Err error }

func (e *badScaleError) Error() string { return e.Err.Error() }
func (e *badScaleError) Unwrap() error { return e.Err }

// notScaleRead is what follows a read whose answer is not a Scale.
const notScaleRead = "Not trusted, no decision"

// notScale returns err as a *badScaleError when it is client-go's decoder
// refusing a 2xx answer that is not an autoscaling/v1 Scale (not JSON, a
// count that is a string, another kind): a broken aggregated API or a proxy
// answering for the API server. client-go gives most of these untyped, so
// its phrasings are matched (apimachinery's serializer/json and the scale
// client). Any other error is returned as it is. then says what follows:
// notScaleRead for a read, whether it was written for a write's answer.
func notScale(err error, then string) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	msg := err.Error()
	if errors.As(err, &syn) || errors.As(err, &typ) || runtime.IsNotRegisteredError(err) ||
		runtime.IsMissingKind(err) || runtime.IsMissingVersion(err) ||
		strings.Contains(msg, "couldn't get version/kind; json parse error") ||
		strings.Contains(msg, "not convertible to autoscaling Scale") {
		return &badScaleError{fmt.Errorf("the answer is not an autoscaling/v1 Scale (%w): is a proxy or an aggregated API answering for the API server? %s", err, then)}
	}
	return err
}

// SetReplicas writes replicas to ref's scale subresource (spec.replicas)
// unless it already holds them. The update carries the resourceVersion it
// read; on a conflict (another writer between the read and the write) it
// reads again and writes the same number (retry.RetryOnConflict's
// backoff: 5 tries): what was decided is not re-decided. No request is
// sent once ctx has ended or its leadership was lost (fence, before each), nor over a
// read Scale would refuse (a negative count: *badScaleError). It returns
// spec.replicas as last read before the write and whether it wrote.
func (c *Cluster) SetReplicas(ctx context.Context, ref Ref, replicas int32) (from int32, wrote bool, err error) {
	ref = c.resolve(ref)
	gr, err := c.resource(ctx, ref)
	if err != nil {
		return 0, false, err
	}
	sc := c.Scales.Scales(ref.Namespace)
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := fence(ctx); err != nil {
			return err // ended or lost (a leadership's WriteContext): no request after
		}
		rctx, cancel := c.bound(ctx)
		defer cancel()
		s, err := sc.Get(rctx, gr, ref.Name, metav1.GetOptions{})
		if err != nil {
			return notScale(err, notScaleRead)
		}
		if err := checkCounts(ref, s); err != nil {
			return err // garbage: not written over
		}
		from, wrote = s.Spec.Replicas, false
		if s.Spec.Replicas == replicas {
			return nil
		}
		s.Spec.Replicas = replicas
		if err := fence(ctx); err != nil {
			return err
		}
		wctx, wcancel := c.bound(ctx)
		defer wcancel()
		if _, err := sc.Update(wctx, gr, s, metav1.UpdateOptions{FieldManager: "infscale"}); err != nil {
			return notScale(err, "whether it was written is unknown (the next read tells)")
		}
		wrote = true
		return nil
	})
	if err != nil {
		return from, false, fmt.Errorf("%s: write spec.replicas %d: %w", ref, replicas, err)
	}
	return from, wrote, nil
}
