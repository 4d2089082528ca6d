package yamlbound

import (
	"errors"
	"strings"
	"testing"
)

// Issue 13 item 6: 40,000 nested flow sequences (80 KB) ran goccy's parser
// out of memory; Check refuses them (and block nesting, and "- - -" on one
// line) at the first token past MaxDepth, in linear time. A real
// configuration passes.
func TestCheck(t *testing.T) {
	deep := "x: " + strings.Repeat("[", 40000) + strings.Repeat("]", 40000) + "\n"
	var e *Error
	if err := Check([]byte(deep)); !errors.As(err, &e) || e.Line != 1 || e.Column != 4+MaxDepth-1 {
		t.Errorf("40,000 deep: %v, want line 1 column %d (the %dth '[' after 'x: ' opens level %d)", err, 4+MaxDepth-1, MaxDepth, MaxDepth+1)
	}
	var block strings.Builder
	for i := 0; i < 100; i++ {
		block.WriteString(strings.Repeat(" ", i) + "k:\n")
	}
	block.WriteString(strings.Repeat(" ", 100) + "v\n")
	if err := Check([]byte(block.String())); !errors.As(err, &e) || e.Line != MaxDepth+1 {
		t.Errorf("100 block levels: %v, want line %d", err, MaxDepth+1)
	}
	if err := Check([]byte(strings.Repeat("- ", 200) + "x\n")); err == nil {
		t.Error(`"- - - ..." 200 deep passed`)
	}
	if err := Check([]byte("a: &a [1]\nb: " + strings.Repeat("*a ", 0) + "[" + strings.Repeat("*a, ", MaxAliases) + "*a]\n")); err == nil {
		t.Errorf("%d aliases passed", MaxAliases+1)
	}
	cfg := `
prometheus: {url: http://prometheus:9090, timeout: 5s}
targets:
- name: chat
  selector: '{app="chat"}'
  metrics:
  - {type: queue, target: 24}
  - type: ttft
    target: 2s
  behavior:
    scaleDown:
      policies:
      - {type: Pods, value: 1, periodSeconds: 60}
`
	if err := Check([]byte(cfg)); err != nil {
		t.Errorf("a real configuration: %v", err)
	}
}

// Issue 23 item 6: a 10 MB flow list of one-character items took 2.0 GB
// to refuse, because goccy's lexer built every token first. The bound
// from the bytes refuses it before anything is built: at the byte where
// the count passes MaxTokens ("x: [" counts 5: x 1, ":" and "[" 2 each; then
// each "a," 2, so the count passes 2^20 at the ',' of item 524,286,
// column 4 + 2·524,286), allocating nothing.
func TestTokensBoundedBeforeLexing(t *testing.T) {
	data := []byte("x: [" + strings.Repeat("a,", 5<<20/2) + "a]\n")
	var e *Error
	if _, err := Tokens(data); !errors.As(err, &e) || e.Line != 1 || e.Column != 4+2*524286 {
		t.Errorf("5 MB of items: %v, want line 1 column %d", err, 4+2*524286)
	}
	if n := testing.AllocsPerRun(1, func() { Tokens(data) }); n > 10 {
		t.Errorf("refusing it allocated %v times, want a few (the error): nothing lexed", n)
	}
}
