package promql

import (
	"fmt"
	"slices"
	"strings"
	"sync/atomic"
)

// PartialVictoriaMetrics is the warning Client adds to an answer that
// VictoriaMetrics marked "isPartial": true (a vmselect that did not hear
// from every vmstorage node answers with what the others hold, unless it
// runs with -search.denyPartialResponse), which client_golang does not
// read. It is Partial.
const PartialVictoriaMetrics = `"isPartial": true: VictoriaMetrics answered without the series of the vmstorage nodes it could not reach`

// Partial returns the first of warnings (an answer's) that says part of
// the data was not read, and whether there is one. Prometheus's own
// PromQL annotations ("PromQL warning: ...", "PromQL info: ...", and its
// count of those left out) are about the query's arithmetic over data it
// has read all of; every other warning comes from storage it could not
// read whole: a Thanos querier's partial response (a store API that
// failed or timed out), a Prometheus remote read that failed,
// PartialVictoriaMetrics. The values of such an answer lack the series of
// the part not read, so a sum or count of pods reads low: read as
// complete, a store outage reads as a drop in load and scales down
// (docs/promql.md, "No data is not zero").
func Partial(warnings []string) (string, bool) {
	for _, w := range warnings {
		if !annotation(w) {
			return w, true
		}
	}
	return "", false
}

// annotation reports whether w is one of Prometheus's PromQL annotations
// (util/annotations: the prefixes "PromQL warning" and "PromQL info", and
// the line counting those past its first 10: "N more warning annotations
// omitted" and "N more info annotations omitted", or "N more annotations
// omitted" from the releases that returned warnings and infos in one
// list, from 2.47 on).
func annotation(w string) bool {
	return strings.HasPrefix(w, "PromQL warning") || strings.HasPrefix(w, "PromQL info") ||
		warningsLeftOut(w) || strings.HasSuffix(w, " more info annotations omitted")
}

// warningsLeftOut reports whether w is Prometheus's count of the warnings
// it left out: "N more warning annotations omitted", or "N more
// annotations omitted" from the releases that listed warnings and infos
// together.
func warningsLeftOut(w string) bool {
	return strings.HasSuffix(w, " more warning annotations omitted") || strings.HasSuffix(w, " more annotations omitted")
}

// warningsOmitted reports whether warnings (an answer's) hold
// Prometheus's count of the warnings it left out (warningsLeftOut):
// storage warnings count against the same limit of 10 as PromQL's own, in
// no set order, so Partial cannot see one that was left out.
func warningsOmitted(warnings []string) bool { return slices.ContainsFunc(warnings, warningsLeftOut) }

// partialKey is the context key of a request's *partialMark.
type partialKey struct{}

// partialMark is set by limitAnswers when an answer's body holds
// VictoriaMetrics's "isPartial":true.
type partialMark struct{ seen atomic.Bool }

// isPartialScan finds the key "isPartial" with the value true in a JSON
// body read in pieces (whitespace allowed around the colon). A JSON
// string cannot hold an unescaped quote, so the quoted key followed by a
// bare true is the envelope's key, never a label's name or value.
type isPartialScan struct {
	state int // bytes of `"isPartial"` matched; past it: 11 before ':', 12 after, 12+k: k bytes of "true"
}

const isPartialKey = `"isPartial"`

// feed scans p and reports whether the key and its true value ended in it.
func (s *isPartialScan) feed(p []byte) bool {
	for _, c := range p {
		switch {
		case s.state < len(isPartialKey):
			if c == isPartialKey[s.state] {
				s.state++
			} else if c == '"' {
				s.state = 1
			} else {
				s.state = 0
			}
		case s.state == len(isPartialKey): // before the colon
			if c == ':' {
				s.state++
			} else if !jsonSpace(c) {
				s.restart(c)
			}
		case s.state == len(isPartialKey)+1 && jsonSpace(c): // after the colon
		default:
			k := s.state - len(isPartialKey) - 1
			if c != "true"[k] {
				s.restart(c)
				continue
			}
			s.state++
			if k == 3 {
				s.state = 0
				return true
			}
		}
	}
	return false
}

// restart begins a new match at c.
func (s *isPartialScan) restart(c byte) {
	s.state = 0
	if c == '"' {
		s.state = 1
	}
}

func jsonSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

// partialError is the error of a signal whose answer to query was partial
// (Partial's warning w): unknown, and what to do.
func partialError(query, w string) *QueryError {
	return &QueryError{Reason: ReasonPartial, Query: query, Err: fmt.Errorf(
		"the answer is partial (warning %q): the series of the part not read are missing, so its totals read low; the signal is unknown until an answer is whole (bring the failed store back, or have the querier refuse partial answers: Thanos --no-query.partial-response, VictoriaMetrics -search.denyPartialResponse)", w)}
}

// PartialAnswer is nil when warnings (an answer's to query) are whole
// (Partial), else the error of a partial answer, ReasonPartial, quoting
// its warning: for a caller that reads a whole history (backtest, tune,
// profile), where a partial one is read as less traffic than ran.
func PartialAnswer(query string, warnings []string) error {
	if w, ok := Partial(warnings); ok {
		return partialError(query, w)
	}
	return nil
}
