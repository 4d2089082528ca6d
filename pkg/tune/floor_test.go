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

// TestCheaperFloor: the winner holds at 95 replica-minutes over 10
// in-sample minutes (9.5 replicas on average), so floors up to 9 could
// undercut it. Per metric the base is the screened row cheaper than the
// winner nearest to holding and the cheapest: demand:0.9 (worst 20%, peak
// 14 on a stressed copy; demand:0.5's 30% is farther), demand:0.95 (15
// replica-minutes, peak 3), and queue:16 (worst 40%, peak 6), nearest and
// cheapest at once; running:32 costs the winner's 60 on the screen and is
// no base. On the screen the fake holds from a floor of 4 up. demand:0.9:
// 9 (the peak capped at 9) holds, then bisected in (1, 9]: 5 holds, 3 does
// not, 4 holds. demand:0.95: its peak 3 does not hold, no bisection.
// queue: 6 holds, then in (1, 6]: 3 does not, 4 holds. Worked by hand from
// lowestHolding's midpoints. Only the two floors found are replayed as
// finalists, and the cheaper, demand:0.9,min=4 at 40, is chosen.
func TestCheaperFloor(t *testing.T) {
	cand := func(metric string, target float64) Candidate {
		return Candidate{Metric: metric, Target: target, Options: []Option{{Name: "min", Value: 1, Default: 1, Key: "minReplicaCount"}}}
	}
	row := func(metric string, target, screenRM, worst float64, peak int) Row {
		c := cand(metric, target)
		return Row{Policy: c.Policy(), Candidate: c, Screen: Figures{ReplicaMinutes: screenRM, Peak: 2}, ScreenStress: []Figures{{MissPct: worst, Peak: peak}}}
	}
	w := row("queue", 8, 60, 0, 20)
	w.InSample, w.OutOfSample = &Figures{ReplicaMinutes: 95}, &Figures{}
	rows := []Row{
		w,
		row("demand", 0.5, 30, 30, 20),
		row("demand", 0.9, 20, 20, 14),
		row("demand", 0.95, 15, 50, 3),
		row("queue", 16, 25, 40, 6),
		row("running", 32, 60, 5, 8),
	}
	var screened, replayed []string
	screen := func(c Candidate) (Row, error) {
		f, _ := c.Option("min")
		screened = append(screened, c.Policy())
		miss := 0.0
		if f < 4 {
			miss = 2
		}
		return Row{Policy: c.Policy(), Candidate: c, Screen: Figures{ReplicaMinutes: 10 * f}, ScreenStress: []Figures{{MissPct: miss}}}, nil
	}
	final := func(r Row) (Row, error) {
		replayed = append(replayed, r.Policy)
		f, _ := r.Candidate.Option("min")
		r.InSample, r.OutOfSample = &Figures{ReplicaMinutes: 10 * f}, &Figures{}
		if r.Candidate.Metric == "queue" {
			r.InSample.ReplicaMinutes += 5
		}
		r.Stress = r.ScreenStress
		return r, nil
	}
	scr, fin, err := cheaperFloor(rows, []Row{w}, w, 10, 0.1, screen, final)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"demand:0.9,min=9", "demand:0.9,min=5", "demand:0.9,min=3", "demand:0.9,min=4",
		"demand:0.95,min=3", "queue:16,min=6", "queue:16,min=3", "queue:16,min=4"}
	if !slices.Equal(screened, want) || len(scr) != len(want) {
		t.Errorf("screened %v (%d rows), want %v", screened, len(scr), want)
	}
	if want := []string{"demand:0.9,min=4", "queue:16,min=4"}; !slices.Equal(replayed, want) || !slices.Equal(policies(fin), want) {
		t.Errorf("replayed %v, finalists %v, want %v", replayed, policies(fin), want)
	}
	all := append([]Row{w}, fin...)
	if best, ok := Choose(all, 0.1); !ok || all[best].Policy != "demand:0.9,min=4" {
		t.Errorf("chosen %d (%v) of %v: want demand:0.9,min=4, 40 replica-minutes against the winner's 95", best, ok, policies(all))
	}

	// Whole replays hold from a floor of 6 up only (a held-out stress the
	// screen lacks): the screen's 4 fails whole, so the top is replayed
	// (demand 9, queue 6), both hold, and the floor is bisected between on
	// whole replays: demand (4, 9]: 6 holds, 5 does not; queue (4, 6]: 5
	// does not. Worked by hand; demand:0.9,min=6 at 60 is chosen.
	screened, replayed = nil, nil
	strict := func(r Row) (Row, error) {
		r, _ = final(r)
		if f, _ := r.Candidate.Option("min"); f < 6 {
			r.Stress = []Figures{{MissPct: 3}}
		}
		return r, nil
	}
	_, fin, err = cheaperFloor(rows, []Row{w}, w, 10, 0.1, screen, strict)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"demand:0.9,min=4", "demand:0.9,min=9", "demand:0.9,min=6", "demand:0.9,min=5",
		"queue:16,min=4", "queue:16,min=6", "queue:16,min=5"}; !slices.Equal(replayed, want) {
		t.Errorf("replayed %v, want %v", replayed, want)
	}
	all = append([]Row{w}, fin...)
	if best, ok := Choose(all, 0.1); !ok || all[best].Policy != "demand:0.9,min=6" {
		t.Errorf("chosen %d (%v) of %v: want demand:0.9,min=6", best, ok, policies(all))
	}

	// A winner at 19 replica-minutes over 10 minutes (1.9 replicas): no
	// floor above the bases' 1 can undercut it, nothing is screened.
	screened, replayed = nil, nil
	w.InSample = &Figures{ReplicaMinutes: 19}
	if scr, fin, err := cheaperFloor(rows, []Row{w}, w, 10, 0.1, screen, final); err != nil || len(scr)+len(fin) != 0 || len(screened)+len(replayed) != 0 {
		t.Errorf("cheap winner: screened %v, replayed %v, err %v; want none", screened, replayed, err)
	}
}
