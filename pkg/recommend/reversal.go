package recommend

import "time"

// ReversalWindow is how soon a change of the desired replicas opposite to
// the previous change counts as a reversal (thrash): 5 minutes, the HPA's
// default scale-down stabilisation window. It is the same for every
// policy, whatever its own windows, so that reversals compare policies:
// a policy with a 60 s scale-down window that goes up and down every 90 s
// thrashes, and is counted.
const ReversalWindow = 5 * time.Minute

// ScaleChange is one change of the desired replicas: when it was made and
// its direction (+1 up, -1 down; 0 is no change yet).
type ScaleChange struct {
	At        time.Time
	Direction int
}

// IsReversal reports whether next reverses prev: the directions are
// opposite and next was made less than window after prev (a change exactly
// one window later is not a reversal). Serve's
// infscale_scale_reversals_total and the replay's reversals column count
// with window ReversalWindow; serve's demo with ReversalWindow in its
// compressed time.
func IsReversal(prev, next ScaleChange, window time.Duration) bool {
	return prev.Direction != 0 && prev.Direction == -next.Direction && next.At.Sub(prev.At) < window
}
