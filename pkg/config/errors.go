package config

import (
	"fmt"
	"strings"
)

// Error is one problem in a configuration file, at a position.
type Error struct {
	// File is the path of the file ("" for in-memory input).
	File string
	// Line and Column are 1-based; 0 when the problem has no single place
	// (a missing key is reported at its parent).
	Line, Column int
	// Key is the path of the key, e.g. targets[0].metrics[1].target.
	Key string
	// Msg says what is wrong and what is allowed.
	Msg string
	// Target is the name of the target whose key Key is (under
	// targets[i]), "" when the key is no target's or the target has no
	// name: a fleet's config is read by name, its errors by index.
	Target string
	// more, on the last Error of a list cut at MaxErrors, is how many
	// problems that line stands for (its Msg says so); 0 on a problem.
	more int
}

// Error formats the problem as file:line:col: key: msg.
func (e Error) Error() string {
	var b strings.Builder
	if e.File != "" {
		b.WriteString(e.File)
		b.WriteByte(':')
	}
	if e.Line > 0 {
		fmt.Fprintf(&b, "%d:%d:", e.Line, e.Column)
	}
	if b.Len() > 0 {
		b.WriteByte(' ')
	}
	if e.Key != "" {
		b.WriteString(e.Key)
		b.WriteString(": ")
	}
	b.WriteString(e.Msg)
	if e.Target != "" {
		fmt.Fprintf(&b, " (target %q)", e.Target)
	}
	return b.String()
}

// Errors is every problem found in one file, in file order. Load returns it
// (as error) when the file is invalid; nothing in the file is used then.
type Errors []Error

// Error joins the problems, one per line.
func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Total is the number of problems found: the ones listed, and those a last
// line stands for when the list was cut at MaxErrors.
func (es Errors) Total() int {
	n := len(es)
	if n > 0 && es[n-1].more > 0 {
		n += es[n-1].more - 1
	}
	return n
}
