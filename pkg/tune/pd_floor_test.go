package tune

import (
	"errors"
	"slices"
	"testing"
)

// TestPDFloorSearch: no pair holds; the finalist of lowest worst miss %
// (prefill 0.6, decode 0.7: 9% on its x2 copy, peaks of 4 prefill and 10
// decode replicas) is retried with its floors at 4 and 10, then each role
// bisected with the fake holding from prefill 3 and decode 6 up. Worked by
// hand: (4,10) holds; prefill in [1, 4] with decode at 10: 2 fails, 3
// holds; decode in [1, 10] with prefill at 3: 5 fails, 7 holds, 6 holds.
// The probes are (4,10), (2,10), (3,10), (3,5), (3,7), (3,6), and the
// cheapest that holds (replica time 10 per floor replica in the fake) is
// (3,6).
func TestPDFloorSearch(t *testing.T) {
	fig := func(miss float64) *Figures { return &Figures{MissPct: miss, ReplicaMinutes: 10} }
	finals := []Row{
		{Policy: "a", pair: pdCandidate{tp: 0.8, td: 0.9}, rolePeak: [2]int{2, 7}, InSample: fig(0), OutOfSample: fig(0), Stress: []Figures{*fig(23)}},
		{Policy: "b", pair: pdCandidate{tp: 0.6, td: 0.7}, rolePeak: [2]int{4, 10}, InSample: fig(0), OutOfSample: fig(0), Stress: []Figures{*fig(9)}},
	}
	var probed [][2]int
	fake := func(needP, needD int) func(pdCandidate) (Row, error) {
		return func(c pdCandidate) (Row, error) {
			if c.tp != 0.6 || c.td != 0.7 {
				t.Errorf("probed %+v, want the finalist of lowest worst miss (0.6, 0.7)", c)
			}
			f := c.floors()
			probed = append(probed, f)
			miss := 0.0
			if f[0] < needP || f[1] < needD {
				miss = 2
			}
			in := fig(0)
			in.ReplicaMinutes = 10 * float64(f[0]+f[1])
			return Row{Policy: c.Policy(), pair: c, Screen: *fig(miss), InSample: in, OutOfSample: fig(0), Stress: []Figures{*fig(miss)}}, nil
		}
	}
	rows, err := pdFloorSearch(finals, 0.1, fake(3, 6))
	if err != nil {
		t.Fatal(err)
	}
	if want := [][2]int{{4, 10}, {2, 10}, {3, 10}, {3, 5}, {3, 7}, {3, 6}}; !slices.Equal(probed, want) {
		t.Errorf("probed floors %v, want %v", probed, want)
	}
	all := append(slices.Clone(finals), rows...)
	if best, ok := Choose(all, 0.1); !ok || all[best].Policy != "recommended(prefill=0.6,decode=0.7,prefill_min=3,decode_min=6)" {
		t.Errorf("rows %v, chosen %d (%v): want prefill_min=3,decode_min=6 chosen, the cheapest that holds", policies(rows), best, ok)
	}

	// Prefill's floor is not what misses: it is raised to 2 (its peak
	// was 1, its floor), then found back at 1, written without
	// prefill_min (the rule's own floor). Probes (2,10), (1,10), then
	// decode as above: (1,5), (1,7), (1,6).
	probed = nil
	flat := slices.Clone(finals)
	flat[1].rolePeak = [2]int{1, 10}
	rows, err = pdFloorSearch(flat, 0.1, fake(1, 6))
	if want := [][2]int{{2, 10}, {1, 10}, {1, 5}, {1, 7}, {1, 6}}; err != nil || !slices.Equal(probed, want) {
		t.Errorf("flat prefill: probed %v (err %v), want %v", probed, err, want)
	}
	if len(rows) != 5 || rows[4].Policy != "recommended(prefill=0.6,decode=0.7,decode_min=6)" || !rows[4].within(0.1) {
		t.Errorf("flat prefill: rows %v, want the last recommended(prefill=0.6,decode=0.7,decode_min=6), holding", policies(rows))
	}

	// The peaks do not hold either: one probe, no bisection.
	probed = nil
	if rows, err := pdFloorSearch(finals, 0.1, fake(5, 11)); err != nil || len(rows) != 1 || !slices.Equal(probed, [][2]int{{4, 10}}) {
		t.Errorf("never holding: rows %v, probed %v, err %v; want the one probe at (4,10)", policies(rows), probed, err)
	}
	// A probe's error ends the search; no finalist, no round.
	boom := errors.New("replay failed")
	if _, err := pdFloorSearch(finals, 0.1, func(pdCandidate) (Row, error) { return Row{}, boom }); !errors.Is(err, boom) {
		t.Errorf("err %v, want %v", err, boom)
	}
	if rows, err := pdFloorSearch(nil, 0.1, fake(1, 1)); err != nil || len(rows) != 0 {
		t.Errorf("no finalists: %v %v", policies(rows), err)
	}
}

// TestPDCandidatePolicy: a pair candidate's string is what ParsePDPolicy
// reads, its floors left out at the rule's own.
func TestPDCandidatePolicy(t *testing.T) {
	for c, want := range map[pdCandidate]string{
		{tp: 0.5, td: 1}:                     "recommended(prefill=0.5,decode=1)",
		{tp: 0.7, td: 0.9, minP: 3}:          "recommended(prefill=0.7,decode=0.9,prefill_min=3)",
		{tp: 0.7, td: 0.9, minP: 2, minD: 5}: "recommended(prefill=0.7,decode=0.9,prefill_min=2,decode_min=5)",
	} {
		if got := c.Policy(); got != want {
			t.Errorf("%+v: %s, want %s", c, got, want)
		}
	}
}

// TestPDCheaperFloor: a winner holds at 100 replica-minutes in sample over
// 10 minutes (10 replicas on average): floors summing to at most 9 can
// undercut it. Rows without floors cheaper on the screen that miss there:
// b (0.6, 0.7; 5% worst, the nearest; peaks 4 prefill, 8 decode) and a
// (0.8, 0.9; 30%, the cheapest; peaks 3 and 6); c is dearer than the
// winner on the screen and is no base. In the fake, b holds on the screen
// from prefill 2 and decode 5 but on whole replays only from decode 6; a
// from 3 and 6 on both; a pair costs 10 replica-minutes per floor
// replica. Worked by hand:
//
//	b: screen (4,8) holds; prefill (2,8) holds, (1,8) not: 2; decode
//	   (2,4) not, (2,6) holds, (2,5) holds: 5. Whole (2,5) fails; decode
//	   alone raised to min(8, 9-2) = 7: (2,7) holds; bisected in (5,7]:
//	   (2,6) holds.
//	a: screen (3,6) holds; prefill (1,6), (2,6) not: 3; decode (3,3),
//	   (3,4), (3,5) not: 6. (3,6) is the raised pair itself, sum 9: whole,
//	   holds.
//
// Finalists added: (2,5), (2,7), (2,6), (3,6); the cheapest holding is
// b at (2,6), 80 replica-minutes. No pair whose floors sum above 9 is
// replayed whole.
func TestPDCheaperFloor(t *testing.T) {
	fig := func(miss, rm float64) *Figures { return &Figures{MissPct: miss, ReplicaMinutes: rm} }
	w := Row{Policy: "w", pair: pdCandidate{tp: 0.9, td: 0.9}, Screen: *fig(0, 100), InSample: fig(0, 100), OutOfSample: fig(0, 10), Stress: []Figures{*fig(0, 0)}}
	rows := []Row{
		{Policy: "a", pair: pdCandidate{tp: 0.8, td: 0.9}, Screen: *fig(30, 40), rolePeak: [2]int{3, 6}},
		{Policy: "b", pair: pdCandidate{tp: 0.6, td: 0.7}, Screen: *fig(1, 50), ScreenStress: []Figures{*fig(5, 60)}, rolePeak: [2]int{4, 8}},
		{Policy: "c", pair: pdCandidate{tp: 0.5, td: 0.5}, Screen: *fig(2, 120), rolePeak: [2]int{9, 9}},
		w,
	}
	need := map[float64][2][2]int{0.6: {{2, 5}, {2, 6}}, 0.8: {{3, 6}, {3, 6}}} // by tp: screen, whole
	var screenProbes, wholeProbes [][2]int
	screen := func(c pdCandidate) (Row, error) {
		f := c.floors()
		screenProbes = append(screenProbes, f)
		n := need[c.tp][0]
		miss := 0.0
		if f[0] < n[0] || f[1] < n[1] {
			miss = 3
		}
		return Row{Policy: c.Policy(), pair: c, Screen: *fig(miss, float64(10*(f[0]+f[1])))}, nil
	}
	final := func(r Row) (Row, error) {
		f := r.pair.floors()
		wholeProbes = append(wholeProbes, f)
		n := need[r.pair.tp][1]
		miss := 0.0
		if f[0] < n[0] || f[1] < n[1] {
			miss = 3
		}
		r.InSample, r.OutOfSample, r.Stress = fig(miss, float64(10*(f[0]+f[1]))), fig(0, 5), []Figures{*fig(miss, 0)}
		return r, nil
	}
	_, finals, err := pdCheaperFloor(rows, []Row{w}, w, 10, 0.1, screen, final)
	if err != nil {
		t.Fatal(err)
	}
	wantScreen := [][2]int{{4, 8}, {2, 8}, {1, 8}, {2, 4}, {2, 6}, {2, 5}, {2, 7}, {3, 6}, {1, 6}, {2, 6}, {3, 3}, {3, 4}, {3, 5}}
	wantWhole := [][2]int{{2, 5}, {2, 7}, {2, 6}, {3, 6}}
	if !slices.Equal(screenProbes, wantScreen) || !slices.Equal(wholeProbes, wantWhole) {
		t.Errorf("screened %v\nwant     %v\nwhole %v, want %v", screenProbes, wantScreen, wholeProbes, wantWhole)
	}
	best, ok := Choose(append([]Row{w}, finals...), 0.1)
	if all := append([]Row{w}, finals...); !ok || all[best].Policy != "recommended(prefill=0.6,decode=0.7,prefill_min=2,decode_min=6)" {
		t.Errorf("chose %s (holds %v), want b at (2,6)", all[best].Policy, ok)
	}
	// A winner no floor can undercut (mean 2.5 replicas: 1 + 1 + 1 > 2):
	// nothing probed.
	screenProbes, wholeProbes = nil, nil
	w2 := w
	w2.InSample = fig(0, 25)
	if s, f, err := pdCheaperFloor(rows, []Row{w2}, w2, 10, 0.1, screen, final); err != nil || len(s)+len(f) != 0 || len(screenProbes) != 0 {
		t.Errorf("no floor below the winner: %d screened, %d finals, %v", len(s), len(f), err)
	}
}
