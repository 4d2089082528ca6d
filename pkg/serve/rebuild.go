package serve

import (
	"context"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/promql"
	"github.com/infscale/infscale/pkg/recommend"
)

// Rebuilder rebuilds a target's state from infscale's own series in
// Prometheus (which scrapes serve's /metrics), for a restart without
// --state-dir. It is an approximation of the saved state:
//
//   - the stabilisation window samples are max by timestamp of
//     infscale_recommended_replicas (the per-metric raw recommendations; the
//     tolerance band is not reconstructed);
//   - the scale events are the changes of infscale_desired_replicas, and the
//     last desired value is its last sample.
//
// --state-dir is exact and takes precedence.
type Rebuilder struct {
	// API answers range queries.
	API promql.API
	// Step is the range queries' resolution (the serve interval).
	Step time.Duration
	// Timeout bounds the rebuild of one target.
	Timeout time.Duration
	// SeriesLabels are the labels Prometheus's scrape gives this serve's
	// series (prometheus.series_labels), matched beside target so that
	// another installation's target of the same name is not read; nil:
	// target alone (promql.OwnSeries).
	SeriesLabels map[string]string
}

// Rebuild returns the target's state as of now, or nil when Prometheus has
// no desired value for it in the policy's horizon (recommend.Policy.Horizon:
// the longest window or period, at least 5 minutes).
func (r *Rebuilder) Rebuild(ctx context.Context, t *config.Target, now time.Time) (*Persisted, error) {
	if r.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.Timeout)
		defer cancel()
	}
	step := r.Step
	if step <= 0 {
		step = 15 * time.Second
	}
	pol, err := t.Policy()
	if err != nil {
		return nil, fmt.Errorf("rebuild %s: %w", t.Name, err)
	}
	// As far back as the windows and periods reach (recommend.Policy.Horizon).
	start := now.Add(-pol.Horizon())
	desired, _, err := r.API.Range(ctx, promql.OwnSeries(Namespace+"_desired_replicas", t.Name, r.SeriesLabels), start, now, step)
	if err != nil {
		return nil, fmt.Errorf("rebuild %s: %w", t.Name, err)
	}
	dpts := points(desired)
	if len(dpts) == 0 {
		return nil, nil
	}
	raw, _, err := r.API.Range(ctx, promql.OwnSeries(Namespace+"_recommended_replicas", t.Name, r.SeriesLabels), start, now, step)
	if err != nil {
		return nil, fmt.Errorf("rebuild %s: %w", t.Name, err)
	}
	p := &Persisted{Version: 1, Current: -1}
	for _, pt := range points(raw) {
		p.State.Recommendations = append(p.State.Recommendations, recommend.TimedReplicas{At: pt.at, Replicas: pt.v})
	}
	for i := 1; i < len(dpts); i++ {
		switch d := dpts[i].v - dpts[i-1].v; {
		case d > 0:
			p.State.ScaleUpEvents = append(p.State.ScaleUpEvents, recommend.ScaleEvent{At: dpts[i].at, Change: d})
		case d < 0:
			p.State.ScaleDownEvents = append(p.State.ScaleDownEvents, recommend.ScaleEvent{At: dpts[i].at, Change: -d})
		}
	}
	last := dpts[len(dpts)-1]
	p.Desired, p.SavedAt = last.v, last.at
	p.State.LastDesired, p.State.LastAt = last.v, last.at
	p.State.FirstSeen = dpts[0].at
	// Activity is not in the series: assume the target was active at its
	// last decision, so a scale-to-zero cooldown starts over (never early).
	p.State.LastActive = last.at
	// A target of min 0 whose last desired was 0 was taken there by
	// idle-to-zero, which needs held known 0 (the HPA's arithmetic never
	// goes below 1): its stay at zero began with held known 0, what
	// State.HeldZeroAt records (carryHeldZero), dated at the trailing
	// zeros' first sample in the window (the stay may be older). Without
	// it an llm-d pool idle at zero past its flow-queue lookback read held
	// unknown after every restart of serve without --state-dir.
	if pol.Min == 0 && last.v == 0 {
		i := len(dpts) - 1
		for i > 0 && dpts[i-1].v == 0 {
			i--
		}
		p.State.HeldZeroAt = dpts[i].at
	}
	return p, nil
}

type point struct {
	at time.Time
	v  int
}

// points flattens a matrix (one series expected after max()) into integer
// samples sorted by time, skipping what infscale never exported: a
// non-finite or negative value, or one above max int32 (a replica count
// is an int32, as the HPA's).
func points(m model.Matrix) []point {
	var out []point
	for _, s := range m {
		for _, sp := range s.Values {
			f := float64(sp.Value)
			if math.IsNaN(f) || f < 0 || f > math.MaxInt32 {
				continue
			}
			out = append(out, point{at: sp.Timestamp.Time().UTC(), v: int(math.Round(f))})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	return out
}
