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
