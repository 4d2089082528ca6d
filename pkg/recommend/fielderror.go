package recommend

import (
	"fmt"
	"strings"
)

// FieldError is one problem of a Policy: Path names the field the way a Go
// reader of Policy would (lower camel case, indexes in brackets), Msg says
// what is wrong and what is allowed. The paths are
//
//	metrics, metrics[i].signal, metrics[i].target, min, max,
//	tolerance, tolerance.up, tolerance.down, lookahead, zero, zero.cooldown,
//	behavior.scaleUp|scaleDown.stabilizationWindowSeconds|selectPolicy|
//	  policies|policies[i].type|value|periodSeconds|tolerance,
//	schedule[i], schedule[i].cron|duration|min|location.
//
// Each syntax maps Path to its own position (the config to file:line:col,
// a policy string to its column, decide to the flag) and keeps Msg. A
// problem that involves a second field (a signal listed twice) names it
// in Msg by its path, Also: each syntax names it its own way (MsgAt).
type FieldError struct {
	Path string
	Msg  string
	// Also is the path of another field the problem involves, which Msg
	// names by that path ("" when none).
	Also string
}

// MsgAt is Msg with Also named as name ("column 8", "entry 1 of
// --metric") instead of by its path; Msg as it is when there is no Also
// or name is "".
func (e FieldError) MsgAt(name string) string {
	if e.Also == "" || name == "" {
		return e.Msg
	}
	return strings.Replace(e.Msg, e.Also, name, 1)
}

// Error is "PATH: MSG" (MSG alone when Path is empty).
func (e FieldError) Error() string {
	if e.Path == "" {
		return e.Msg
	}
	return e.Path + ": " + e.Msg
}

// FieldErrors is every problem found, in field order; Policy.Validate
// returns it (as error) when the policy is invalid.
type FieldErrors []FieldError

// Error joins the problems, one per line.
func (es FieldErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// add appends a problem at path.
func (es *FieldErrors) add(path, format string, args ...any) {
	*es = append(*es, FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// err is es as an error, nil when empty.
func (es FieldErrors) err() error {
	if len(es) == 0 {
		return nil
	}
	return es
}
