//go:build replayharness

// This file is a test harness: the real HPA controller's test in
// deploy/kubee2e (its own module) holds the replay's HPA consumer against
// it. Built only with -tags replayharness (make test-kube), so the binary
// does not link it.

package replay

import (
	"fmt"
	"math"
	"time"

	"github.com/infscale/infscale/pkg/recommend"
)

// HPAStep is one reconcile of the HPA in an hpa(POLICY) policy: At seconds
// after the epoch, Desired is the inner policy's output (the External
// metric's value, infscale_desired_replicas) and Current the workload's
// replicas (the scale subresource's status.replicas, the AverageValue
// divisor).
type HPAStep struct {
	At      float64
	Desired int
	Current int
}

// HPAReplicas runs the HPA of the hpa(...) policy pol alone on steps, with
// no simulator, and returns the replicas it sets (spec.replicas) at each
// step: the consumer the replay runs, started as the controller starts on
// first seeing an HPA (no warm start; the first step's Current is its
// initial recommendation). It is pure: epoch + At is its only clock.
// Errors: pol is not an hpa(...) policy; At not finite or going back.
func HPAReplicas(pol Policy, epoch time.Time, steps []HPAStep) ([]int, error) {
	if pol.hpa == nil {
		return nil, fmt.Errorf("policy %q is not hpa(POLICY)", pol.Name)
	}
	c := &hpaCtl{outer: newInfscale(pol.hpa, epoch)}
	out := make([]int, len(steps))
	for i, s := range steps {
		if math.IsNaN(s.At) || math.IsInf(s.At, 0) {
			return nil, fmt.Errorf("step %d: at %v s: want a finite time", i, s.At)
		}
		if i > 0 && s.At < steps[i-1].At {
			return nil, fmt.Errorf("step %d: at %v s, before step %d's %v s: want steps in time order", i, s.At, i-1, steps[i-1].At)
		}
		c.inner = fixed(s.Desired)
		obs := recommend.Unknown()
		obs.Current = s.Current
		out[i] = c.Decide(s.At, obs)
	}
	return out, nil
}
