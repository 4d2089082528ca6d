package scrape

import (
	"strings"

	"github.com/infscale/infscale/pkg/profile"
)

// detect returns the first server (profile.Servers order) whose running or
// waiting families appear on the page (declared or with samples); else whose
// other families appear; else one of whose name prefixes starts a family on
// the page; else Unknown.
func detect(raw *rawPage) profile.Server {
	for _, names := range []func(profile.Families) []string{profile.Families.Queue, profile.Families.All} {
		for _, s := range profile.Servers() {
			for _, n := range names(s.Families()) {
				if raw.has(n) {
					return s
				}
			}
		}
	}
	for _, s := range profile.Servers() {
		for _, prefix := range s.Families().Prefixes {
			for n := range raw.byName {
				if strings.HasPrefix(n, prefix) {
					return s
				}
			}
			for n := range raw.declared {
				if strings.HasPrefix(n, prefix) {
					return s
				}
			}
		}
	}
	return profile.Unknown
}

func noProfile(source string, raw *rawPage) error {
	e := &NoProfileError{Source: source}
	for _, s := range profile.Servers() {
		e.LookedFor = append(e.LookedFor, ServerFamilies{Server: s.String(), Families: s.Families().All()})
	}
	seen := map[string]bool{}
	for n := range raw.declared {
		seen[n] = true
	}
	for n := range raw.byName {
		seen[raw.family[n]] = true
	}
	e.Seen = sortedKeys(seen)
	return e
}
