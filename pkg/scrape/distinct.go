package scrape

import (
	"errors"
	"fmt"

	"github.com/infscale/infscale/internal/sourcekey"
)

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

// CheckDistinct is nil when no two srcs name the same page (sourcekey.Duplicates),
// else the DuplicateError of each repeat, joined.
func CheckDistinct(srcs []string) error {
	var errs []error
	for i, j := range sourcekey.Duplicates(srcs) {
		if j >= 0 {
			errs = append(errs, DuplicateError(srcs, i, j))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errors.Join(errs...)
}
