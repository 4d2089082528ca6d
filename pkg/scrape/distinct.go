package scrape

import (
	"errors"
	"fmt"

	"github.com/infscale/infscale/internal/sourcekey"
)

// Duplicates finds the sources that name a page an earlier one already
// names (sourcekey.Of): for each i, the index of the first source naming the
// same page, or -1. Read twice, one replica would vote twice (its requests
// counted twice, one replica counted as two).
func Duplicates(srcs []string) []int {
	first := make(map[string]int, len(srcs))
	out := make([]int, len(srcs))
	for i, s := range srcs {
		k := sourcekey.Of(s)
		if j, seen := first[k]; seen {
			out[i] = j
			continue
		}
		first[k], out[i] = i, -1
	}
	return out
}

// DuplicateError is the error for srcs[i], which names the same page as
// srcs[j] (j < i): ErrSource, both named with any password hidden, 1-based
// positions as a reader counts arguments.
func DuplicateError(srcs []string, i, j int) error {
	if srcs[i] == "-" {
		return fmt.Errorf("-: %w: standard input can be read only once (PAGE - appears twice)", ErrSource)
	}
	same := ""
	if srcs[i] != srcs[j] {
		same = fmt.Sprintf(" %s", sourcekey.Redact(srcs[j]))
	}
	return fmt.Errorf("%s: %w: the same page as page %d%s; name each replica's page once (read twice, one replica would count as two)", sourcekey.Redact(srcs[i]), ErrSource, j+1, same)
}

// CheckDistinct is nil when no two srcs name the same page (Duplicates),
// else the DuplicateError of each repeat, joined.
func CheckDistinct(srcs []string) error {
	var errs []error
	for i, j := range Duplicates(srcs) {
		if j >= 0 {
			errs = append(errs, DuplicateError(srcs, i, j))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errors.Join(errs...)
}
