package promql

import (
	"errors"
	"strings"
	"testing"
)

// TestParseSelectorMissingBraces: matchers written without their braces
// (namespace="llm", as a label list reads) said only "parse error:
// unexpected =": the error now shows the selector with its braces.
func TestParseSelectorMissingBraces(t *testing.T) {
	for in, want := range map[string]string{
		`namespace="llm"`:                 "label matchers go in braces: write '{namespace=\"llm\"}'",
		`namespace="llm", pod=~"chat-.*"`: "write '{namespace=\"llm\", pod=~\"chat-.*\"}'",
		` namespace="llm",app!="x" `:      "write '{namespace=\"llm\",app!=\"x\"}'",
	} {
		_, err := ParseSelector(in)
		if err == nil || !errors.Is(err, ErrInvalidQuery) || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseSelector(%q) = %v, want ErrInvalidQuery containing %q", in, err, want)
		}
	}
	// Not matchers without braces: no such hint.
	for _, in := range []string{`namespace`, `{namespace="llm"`, `up{namespace="llm"}`} {
		if _, err := ParseSelector(in); err == nil || strings.Contains(err.Error(), "go in braces") {
			t.Errorf("ParseSelector(%q) = %v, want an error without the braces hint", in, err)
		}
	}
}
