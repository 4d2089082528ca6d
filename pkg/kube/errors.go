package kube

import (
	"context"
	"errors"
	"net"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
)

// Reason classifies a Kubernetes error for infscale_query_errors_total
// and infscale_apply_errors_total: not_found, forbidden, unauthorized,
// conflict, timeout, scaled_by_hpa, scaled_by_scaledobject, not_leader,
// no_scale, bad_data (a scale answer no valid API server gives),
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
	case errors.As(err, new(*NoScaleError)):
		return "no_scale"
	case errors.As(err, new(*badScaleError)):
		return "bad_data"
	case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		return "not_found"
	case apierrors.IsForbidden(err):
		return "forbidden"
	case apierrors.IsUnauthorized(err):
		return "unauthorized"
	case apierrors.IsConflict(err):
		return "conflict"
	case errors.Is(err, context.DeadlineExceeded) || apierrors.IsTimeout(err) || apierrors.IsServerTimeout(err) || isNetTimeout(err) || throttledPastBound(err):
		return "timeout"
	}
	return "unavailable"
}

// ErrNotLeader is Applier.Apply's answer on an instance that does not hold
// the lease: nothing was written, and that is not a failure.
var ErrNotLeader = errors.New("not the leader: another instance writes")

// throttledPastBound reports client-go's client-side rate limiter refusing
// a request whose wait would pass its deadline (RequestTimeout): the
// request was not sent within the bound, a timeout. x/time/rate gives it
// untyped ("rate: Wait(n=1) would exceed context deadline").
func throttledPastBound(err error) bool {
	return err != nil && strings.Contains(err.Error(), "would exceed context deadline")
}

// isNetTimeout reports an HTTP client timeout (rest.Config.Timeout) or a
// dial timeout: a *url.Error or net.Error whose Timeout() is true.
func isNetTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
