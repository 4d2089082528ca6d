package backtest

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestReconstructPair: the pair's arrivals are the prefill pool's, its
// output lengths the decode pool's, its prompt lengths the decode pool's
// when the prefill pool has none; each pool's replicas on the grid, held
// across a missing point.
func TestReconstructPair(t *testing.T) {
	g := Grid{Start: t0, Step: time.Minute, N: 4}
	nan := math.NaN()
	pre := History{Grid: g, InFlight: make([]float64, 5), Replicas: []float64{1, 1, 2, 2, 2},
		Success:    []Series{{Labels: "{pod=p}", Points: pts(0, 0, 60, 10, 120, 20, 180, 30, 240, 40)}},
		PromptMean: nan, OutputMean: 1}
	dec := History{Grid: g, InFlight: make([]float64, 5), Replicas: []float64{3, nan, 4, 4, 4},
		Success:    []Series{{Labels: "{pod=d}", Points: pts(0, 0, 60, 5, 120, 10, 180, 15, 240, 20)}},
		PromptMean: 800, OutputMean: 150}
	w, err := ReconstructPair(pre, dec, Options{})
	if err != nil {
		t.Fatal(err)
	}
	// 40 completions at the prefill pool over 4 minutes, nothing in flight.
	near(t, "requests", w.Requests, 40, 1e-9)
	near(t, "decode requests", w.DecodeRequests, 20, 1e-9)
	near(t, "prompt mean", w.Prompt.Mean, 800, 0)
	near(t, "output mean", w.Output.Mean, 150, 0)
	if !slices.Equal(w.Replicas, []float64{1, 1, 2, 2, 2}) || !slices.Equal(w.DecodeReplicas, []float64{3, 3, 4, 4, 4}) {
		t.Errorf("replicas %v and %v; want [1 1 2 2 2] and [3 3 4 4 4]", w.Replicas, w.DecodeReplicas)
	}
	// Minutes: prefill 1+1+2+2 = 6, decode 3+3+4+4 = 14 (points 0..N-1).
	near(t, "prefill replica-minutes", w.ReplicaSeconds()/60, 6, 1e-9)
	near(t, "decode replica-minutes", Workload{Grid: w.Grid, Replicas: w.DecodeReplicas}.ReplicaSeconds()/60, 14, 1e-9)

	// A decode pool without series: its role named, ErrNoTraffic kept.
	dec.Success = nil
	_, err = ReconstructPair(pre, dec, Options{})
	var pe *PoolError
	if !errors.As(err, &pe) || pe.Role != "decode" || !errors.Is(err, ErrNoTraffic) {
		t.Errorf("err %v; want the decode pool's ErrNoTraffic", err)
	}
}

// TestPairMismatch: the pools' counts within 5% (+1) pass; 10% more at
// decode warns of requests llm-d did not disaggregate, 10% fewer of a
// selector that misses pods.
func TestPairMismatch(t *testing.T) {
	for _, c := range []struct {
		dec  float64
		want string
	}{{1000, ""}, {1051, ""}, {1100, "10% more than the prefill pool's 1000"}, {900, "fewer than the prefill pool's 1000"}} {
		w := PairReport{Requests: 1000, DecodeRequests: c.dec}.Mismatch()
		if (c.want == "") != (len(w) == 0) || (c.want != "" && !strings.Contains(w[0], c.want)) {
			t.Errorf("decode %g: %q; want %q", c.dec, w, c.want)
		}
	}
}
