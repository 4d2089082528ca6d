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
