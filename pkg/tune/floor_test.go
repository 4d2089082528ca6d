package tune

import (
	"errors"
	"slices"
	"testing"
)

// TestFloorSearch: no finalist holds; the one of lowest worst miss %
// (queue:8 at min 1, its x2 copy 9% with a peak of 12 replicas) is
// retried with the floor at 12, then bisected: 12 holds, 6 holds, 3 and
// 4 do not, 5 holds: the probes are 12, 6, 3, 4, 5 (worked by hand, the
// fake holding from a floor of 5 up) and the lowest that holds is 5.
func TestFloorSearch(t *testing.T) {
	cand := func(metric string, target, floor float64) Candidate {
		return Candidate{Metric: metric, Target: target, Options: []Option{{Name: "min", Value: floor, Default: 1, Key: "minReplicaCount"}}}
	}
	fig := func(miss float64, peak int) *Figures { return &Figures{MissPct: miss, Peak: peak, ReplicaMinutes: 10} }
	finals := []Row{
		{Policy: "queue:16", Candidate: cand("queue", 16, 1), InSample: fig(0, 3), OutOfSample: fig(0, 2), Stress: []Figures{*fig(18, 40)}},
		{Policy: "queue:8", Candidate: cand("queue", 8, 1), InSample: fig(0, 3), OutOfSample: fig(0, 2), Stress: []Figures{*fig(9, 12)}},
	}
	var probed []float64
	probe := func(c Candidate) (Row, error) {
		f, _ := c.Option("min")
		probed = append(probed, f)
		miss := 0.0
		if f < 5 {
			miss = 2
		}
		if c.Metric != "queue" || c.Target != 8 {
			t.Errorf("probed %s:%g, want the finalist of lowest worst miss, queue:8", c.Metric, c.Target)
		}
		in := fig(miss, int(f))
		in.ReplicaMinutes = 10 * f // a higher floor costs more
		return Row{Policy: c.Policy(), Candidate: c, Screen: *fig(miss, int(f)), InSample: in, OutOfSample: fig(0, int(f)), Stress: []Figures{*fig(miss, int(f))}}, nil
	}
	rows, err := floorSearch(finals, 0.1, probe)
	if err != nil {
		t.Fatal(err)
	}
	if want := []float64{12, 6, 3, 4, 5}; !slices.Equal(probed, want) {
		t.Errorf("probed floors %v, want %v", probed, want)
	}
	all := append(slices.Clone(finals), rows...)
	if best, ok := Choose(all, 0.1); !ok || all[best].Policy != "queue:8,min=5" {
		t.Errorf("rows %v, chosen %d (%v): want queue:8,min=5 chosen, the cheapest that holds", policies(rows), best, ok)
	}

	// The peak floor does not hold either: one probe, and no bisection.
	probed = nil
	never := func(c Candidate) (Row, error) {
		r, _ := probe(c)
		r.Stress[0].MissPct = 50
		return r, nil
	}
	if rows, err := floorSearch(finals, 0.1, never); err != nil || len(rows) != 1 || !slices.Equal(probed, []float64{12}) {
		t.Errorf("never holding: rows %v, probed %v, err %v; want the one probe at 12", policies(rows), probed, err)
	}
	// A finalist that never rose above its floor of 1 (peak 1) is tried at
	// 2: one probe, which holds.
	probed = nil
	flat := []Row{{Policy: "queue:8", Candidate: cand("queue", 8, 1), InSample: fig(0, 1), OutOfSample: fig(0, 1), Stress: []Figures{*fig(0.6, 1)}}}
	if rows, err := floorSearch(flat, 0.1, func(c Candidate) (Row, error) {
		r, _ := probe(c)
		r.Screen.MissPct, r.InSample.MissPct, r.Stress[0].MissPct = 0, 0, 0
		return r, nil
	}); err != nil || !slices.Equal(probed, []float64{2}) || len(rows) != 1 || rows[0].worst() > 0.1 {
		t.Errorf("flat finalist: probed %v, rows %v, err %v; want the one probe at 2, holding", probed, policies(rows), err)
	}
	// A probe's error ends the search; a candidate without a floor option
	// has no floor round.
	boom := errors.New("replay failed")
	if _, err := floorSearch(finals, 0.1, func(Candidate) (Row, error) { return Row{}, boom }); !errors.Is(err, boom) {
		t.Errorf("err %v, want %v", err, boom)
	}
	noMin := []Row{{Policy: "queue:8", Candidate: Candidate{Metric: "queue", Target: 8}, InSample: fig(0, 3), OutOfSample: fig(0, 2), Stress: []Figures{*fig(9, 12)}}}
	if rows, err := floorSearch(noMin, 0.1, probe); err != nil || len(rows) != 0 {
		t.Errorf("no min option: %v %v, want none", policies(rows), err)
	}
}

func policies(rows []Row) []string {
	var out []string
	for _, r := range rows {
		out = append(out, r.Policy)
	}
	return out
}
