package scrape

import (
	"strings"

	"github.com/infscale/infscale/pkg/modelserver"
)

// selectSeries indexes, under its own text, every family alternative of
// the known servers written as a selector (name{label="value"},
// modelserver.Series): byName gets the samples of the name whose labels
// match, family and declared follow the name's. The readers (pick,
// detect, the sanity checks) then take such an alternative like any
// family; the samples themselves are not copied, and Families and Declared
// still list the page's own names.
func (r *rawPage) selectSeries() {
	for _, s := range modelserver.Servers() {
		for _, alt := range s.Families().All() {
			if !strings.ContainsRune(alt, '{') {
				continue
			}
			name, ms := modelserver.Series(alt)
			if r.declared[name] {
				r.declared[alt] = true
			}
			var idx []int
		samples:
			for _, j := range r.byName[name] {
				for _, m := range ms {
					if !m.Matches(r.samples[j].Labels.Get(m.Name)) {
						continue samples
					}
				}
				idx = append(idx, j)
			}
			if len(idx) > 0 {
				r.byName[alt] = idx
				r.family[alt] = r.family[name]
			}
		}
	}
}
