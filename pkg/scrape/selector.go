package scrape

import (
	"strings"
	"sync"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/infscale/infscale/pkg/modelserver"
)

// selectorAlt is a family alternative written as a selector
// (name{label="value"}, modelserver.Series), parsed.
type selectorAlt struct {
	alt, name string
	matchers  []*labels.Matcher
}

// selectorAlts are the known servers' selector alternatives, parsed once
// (the tables are constants; every page read looks them up).
var selectorAlts = sync.OnceValue(func() []selectorAlt {
	var out []selectorAlt
	for _, s := range modelserver.Servers() {
		for _, alt := range s.Families().All() {
			if strings.ContainsRune(alt, '{') {
				name, ms := modelserver.Series(alt)
				out = append(out, selectorAlt{alt, name, ms})
			}
		}
	}
	return out
})

// selectSeries indexes, under its own text, every family alternative of
// the known servers written as a selector (name{label="value"},
// modelserver.Series): byName gets the samples of the name whose labels
// match, family and declared follow the name's. The readers (pick,
// detect, the sanity checks) then take such an alternative like any
// family; the samples themselves are not copied, and Families and Declared
// still list the page's own names.
func (r *rawPage) selectSeries() {
	for _, a := range selectorAlts() {
		if r.declared[a.name] {
			r.declared[a.alt] = true
		}
		var idx []int
	samples:
		for _, j := range r.byName[a.name] {
			for _, m := range a.matchers {
				if !m.Matches(r.samples[j].Labels.Get(m.Name)) {
					continue samples
				}
			}
			idx = append(idx, j)
		}
		if len(idx) > 0 {
			r.byName[a.alt] = idx
			r.family[a.alt] = r.family[a.name]
		}
	}
}
