package promql

// Build (for tests) returns the PromQL of every signal the target asks for, printed
// canonically, keyed by signal. Signals the profile has no family for are
// absent (Evaluate reports them as ReasonUnsupported). Errors: Unknown
// server, an empty selector, an invalid TTFT spec, or an override, replicas
// or held query that does not validate (wrapping ErrInvalidQuery).
func Build(t Target, opts Options) (map[Signal]string, error) {
	exprs, err := buildExprs(t, opts)
	if err != nil {
		return nil, err
	}
	out := make(map[Signal]string, len(exprs))
	for s, e := range exprs {
		out[s] = e.String()
	}
	return out, nil
}
