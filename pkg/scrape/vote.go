package scrape

// Ballot is whether one replica's page votes in the load totals.
type Ballot int

const (
	// Votes: the page was read and is counted as load.
	Votes Ballot = iota
	// Unread: the page could not be read (unreachable, timeout, HTTP
	// error); a missing replica.
	Unread
	// Stuck: the page was read but the replica looks like a stuck engine;
	// a missing replica.
	Stuck
)

// Vote is the page -> load rule of decide and serve (docs/serve.md, "Stuck
// engines"): a page whose errs[i] is non-nil, or that stuck(i, page)
// reports as a stuck engine, does not vote. It is left out of the totals
// and of the reporting replicas, so the HPA's missing-pods rule counts it
// at 0 on a scale-up and at target on a scale-down. stuck is called only
// for read pages, in index order. Vote returns each page's Ballot, the
// voting pages (nil where a page does not vote, the len of pages) and
// their Aggregate. errs has the len of pages.
func Vote(pages []*Page, errs []error, stuck func(i int, p *Page) bool) ([]Ballot, []*Page, Totals) {
	ballots := make([]Ballot, len(pages))
	voting := make([]*Page, len(pages))
	for i, p := range pages {
		switch {
		case errs[i] != nil:
			ballots[i] = Unread
		case stuck(i, p):
			ballots[i] = Stuck
		default:
			voting[i] = p
		}
	}
	return ballots, voting, Aggregate(voting)
}
