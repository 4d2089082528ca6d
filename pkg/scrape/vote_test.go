package scrape

import (
	"errors"
	"math"
	"slices"
	"testing"
)

// TestVote: three replicas, one unread, one stuck by the caller's rule, one
// voting; the totals are the voting page's alone (running 3, waiting 4, KV
// 0.5, one reporting), as docs/serve.md's "Stuck engines" says.
func TestVote(t *testing.T) {
	pages := []*Page{
		nil,
		{Source: "b", Running: 0, Waiting: 9, KV: 0, Suspect: "stuck"},
		{Source: "c", Running: 3, Waiting: 4, KV: 0.5},
	}
	errs := []error{errors.New("a: timeout"), nil, nil}
	var asked []int
	ballots, voting, tot := Vote(pages, errs, func(i int, p *Page) bool {
		asked = append(asked, i)
		return p.Suspect != ""
	})
	if want := []Ballot{Unread, Stuck, Votes}; !slices.Equal(ballots, want) {
		t.Errorf("ballots %v, want %v", ballots, want)
	}
	if len(asked) != 2 || asked[0] != 1 || asked[1] != 2 {
		t.Errorf("stuck asked about %v, want the read pages [1 2]", asked)
	}
	if len(voting) != 3 || voting[0] != nil || voting[1] != nil || voting[2] != pages[2] {
		t.Errorf("voting %v, want [nil nil c]", voting)
	}
	if tot.Running != 3 || tot.Waiting != 4 || tot.KV != 0.5 || tot.Reporting != 1 {
		t.Errorf("totals running %g waiting %g kv %g reporting %d, want 3 4 0.5 1", tot.Running, tot.Waiting, tot.KV, tot.Reporting)
	}
	// Nothing votes: every signal is unknown (NaN), nobody reports.
	_, _, tot = Vote(pages[:2], errs[:2], func(int, *Page) bool { return true })
	if !math.IsNaN(tot.Running) || !math.IsNaN(tot.Waiting) || !math.IsNaN(tot.KV) || tot.Reporting != 0 {
		t.Errorf("no voter: totals %+v, want NaN signals and 0 reporting", tot)
	}
}
