package promql

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// Case 15 (shared/testdata/cases/15-label-value-escaping.*): a model_name of
// `team "a" model\v2` must print as {model_name="team \"a\" model\\v2"}
// (quote and backslash escaped once), and the printed query must parse back
// to the same value.
func TestSelectorEscapesCase15(t *testing.T) {
	value := `team "a" model\v2`
	sel := []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "model_name", value)}
	got := aggregate(parser.SUM, false, nil, selector("vllm:num_requests_running", sel)).String()
	want := `sum(vllm:num_requests_running{model_name="team \"a\" model\\v2"})`
	if got != want {
		t.Fatalf("got  %s\nwant %s", got, want)
	}
	back, err := pql.ParseExpr(got)
	if err != nil {
		t.Fatalf("printed query does not parse: %v", err)
	}
	var seen string
	parser.Inspect(back, func(n parser.Node, _ []parser.Node) error {
		if vs, ok := n.(*parser.VectorSelector); ok {
			for _, m := range vs.LabelMatchers {
				if m.Name == "model_name" {
					seen = m.Value
				}
			}
		}
		return nil
	})
	if seen != value {
		t.Fatalf("round trip: got %q, want %q", seen, value)
	}
}

// The selector from the config is parsed, not interpolated: the escaped
// form in YAML decodes to the raw value.
func TestParseSelectorDecodesEscapes(t *testing.T) {
	ms, err := ParseSelector(`{namespace="llm", model_name="team \"a\" model\\v2", pod=~"chat-.*"}`)
	if err != nil {
		t.Fatal(err)
	}
	if len(ms) != 3 || ms[1].Value != `team "a" model\v2` || ms[2].Type != labels.MatchRegexp {
		t.Fatalf("got %v", ms)
	}
}

func TestParseSelectorErrors(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{namespace="llm}`, `1:12: parse error: unterminated quoted string`},
		{`vllm:num_requests_running{pod="a"}`, "names a metric"},
		{`{}`, ""},
		{`{pod=~"("}`, "error parsing regexp"},
	} {
		_, err := ParseSelector(tc.in)
		if err == nil || !errors.Is(err, ErrInvalidQuery) {
			t.Errorf("%s: got %v, want ErrInvalidQuery", tc.in, err)
			continue
		}
		if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), tc.in) {
			t.Errorf("%s: error %q lacks %q or the input", tc.in, err, tc.want)
		}
	}
}

// Validate keeps the parser's position: a user query with a typo reports
// line:column and the query.
func TestValidatePosition(t *testing.T) {
	q := `sum(rate(vllm:request_success_total[5m])) by (pod`
	_, err := Validate(q)
	if !errors.Is(err, ErrInvalidQuery) {
		t.Fatalf("got %v", err)
	}
	var pe parser.ParseErrors
	if !errors.As(err, &pe) || len(pe) == 0 {
		t.Fatalf("parser error not wrapped: %v", err)
	}
	// The parser reports the unclosed grouping at column 50 (1-based,
	// just past the end of the 49-character query).
	if !strings.Contains(err.Error(), "1:50: parse error") || !strings.Contains(err.Error(), q) {
		t.Fatalf("message lacks position or query: %v", err)
	}
	if _, err := Validate(`vllm:num_requests_running[5m]`); !errors.Is(err, ErrInvalidQuery) || !strings.Contains(err.Error(), "range vector") {
		t.Fatalf("range vector accepted: %v", err)
	}
	if _, err := Validate(`scalar(up)`); err != nil {
		t.Fatalf("scalar refused: %v", err)
	}
}

func FuzzValidate(f *testing.F) {
	for _, s := range []string{`sum(up)`, `a{b="c"} or d`, `histogram_quantile(0.9, sum by (le) (rate(x_bucket[5m])))`, `{`, `"\`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		expr, err := Validate(q)
		if err != nil {
			if !errors.Is(err, ErrInvalidQuery) {
				t.Fatalf("error not wrapped: %v", err)
			}
			return
		}
		// Whatever parses must still parse after printing.
		if _, err := pql.ParseExpr(expr.String()); err != nil {
			t.Fatalf("%q: printed query does not parse: %v", q, err)
		}
	})
}

// TestCovers: a selector covers another when each of its matchers is
// among the other's, whatever the order and spacing: {namespace="llm"}
// selects every series {namespace="llm", role="decode"} does, not the
// reverse; equal sets cover each other; a regexp that would match more is
// not read (matchers compare as written).
func TestCovers(t *testing.T) {
	ms := func(s string) []*labels.Matcher {
		m, err := ParseSelector(s)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	for _, c := range []struct {
		a, b string
		want bool
	}{
		{`{namespace="llm"}`, `{role="decode", namespace="llm"}`, true},
		{`{role="decode",namespace="llm"}`, `{namespace="llm"}`, false},
		{`{pod=~"chat-.*", namespace="llm"}`, `{namespace="llm",pod=~"chat-.*"}`, true},
		{`{namespace="llm", role!="decode"}`, `{namespace="llm", role="decode"}`, false},
		{`{pod=~"chat-.*"}`, `{pod=~"chat-prefill-.*"}`, false},
	} {
		if got := Covers(ms(c.a), ms(c.b)); got != c.want {
			t.Errorf("Covers(%s, %s) = %v, want %v", c.a, c.b, got, c.want)
		}
	}
	if got, want := MatcherSet(ms(`{role="decode", namespace="llm"}`)), []string{`namespace="llm"`, `role="decode"`}; !slices.Equal(got, want) {
		t.Errorf("MatcherSet: %q, want %q", got, want)
	}
}
