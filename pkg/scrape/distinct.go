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

// CheckDistinct is nil when no src is empty and no two srcs name the same
// page (sourcekey.Duplicates), else ErrSource naming each empty one (an unset
// shell variable, which would read as a missing file named "") and the
// DuplicateError of each repeat, joined.
func CheckDistinct(srcs []string) error {
	var errs []error
	for i, src := range srcs {
		if src == "" {
			errs = append(errs, fmt.Errorf("%w: PAGE %d is empty (an unset shell variable?): give a file, an http(s) URL or -", ErrSource, i+1))
		}
	}
	for i, j := range sourcekey.Duplicates(srcs) {
		if j >= 0 && srcs[i] != "" {
			errs = append(errs, DuplicateError(srcs, i, j))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errors.Join(errs...)
}
