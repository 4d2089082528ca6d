package replay

import "testing"

// TestSearches: only optimal searches before its replay (its seeds sized
// by Config.SearchAtOnce), for one pool and for a pair; the commands size
// for those seeds only when a policy searches.
func TestSearches(t *testing.T) {
	for spec, want := range map[string]bool{"optimal": true, "recommended": false, "oracle": false, "fixed:3": false, "hpa(recommended)": false} {
		p, err := ParsePolicy(spec)
		if err != nil {
			t.Fatal(err)
		}
		if p.Searches() != want {
			t.Errorf("%s: Searches() = %v, want %v", spec, p.Searches(), want)
		}
	}
	for spec, want := range map[string]bool{"optimal": true, "recommended": false, "llmd-queue": false} {
		p, err := ParsePDPolicy(spec)
		if err != nil {
			t.Fatal(err)
		}
		if p.Searches() != want {
			t.Errorf("pair %s: Searches() = %v, want %v", spec, p.Searches(), want)
		}
	}
}
