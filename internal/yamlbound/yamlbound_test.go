package yamlbound

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/goccy/go-yaml/lexer"

	"github.com/infscale/infscale/internal/membudget"
)

// Check is Tokens without a memory budget, its error alone: an *Error
// when data nests deeper than MaxDepth or has more than MaxTokens tokens
// or MaxAliases aliases; nil otherwise (a syntax error included).
func Check(data []byte) error {
	_, err := Tokens(data, membudget.Of(0, 0))
	return err
}

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
	if _, err := Tokens(data, membudget.Of(0, 0)); !errors.As(err, &e) || e.Line != 1 || e.Column != 4+2*524286 {
		t.Errorf("5 MB of items: %v, want line 1 column %d", err, 4+2*524286)
	}
	if n := testing.AllocsPerRun(1, func() { Tokens(data, membudget.Of(0, 0)) }); n > 10 {
		t.Errorf("refusing it allocated %v times, want a few (the error): nothing lexed", n)
	}
}

// A budget refuses before lexing at the byte where the lexer's cost could
// pass it: "x: [" counts 5, each "a," 2 more. With 100,000 bytes of budget
// beside the text's 12 a byte, the lexer may make (100,000)/320 = 312
// counted tokens; the count passes 312 at the ',' of item i where
// 5 + 2i > 312, i = 154, column 4 + 2·154 = 312.
func TestTokensRefusedByBudgetBeforeLexing(t *testing.T) {
	data := []byte("x: [" + strings.Repeat("a,", 1000) + "a]\n")
	b := membudget.Budget{Limit: 1 << 30, Used: 1 << 20, Available: int64(len(data))*12 + 100000}
	var e *Error
	_, err := Tokens(data, b)
	if !errors.As(err, &e) || e.Line != 1 || e.Column != 312 {
		t.Fatalf("got %v, want a refusal at line 1 column 312", err)
	}
	for _, want := range []string{"memory limit 1024 MiB", "resources.limits.memory"} {
		if !strings.Contains(e.Msg, want) {
			t.Errorf("message %q lacks %q", e.Msg, want)
		}
	}
	if raceEnabled {
		return // -race instruments the code with allocations of its own
	}
	if n := testing.AllocsPerRun(1, func() { Tokens(data, b) }); n > 10 {
		t.Errorf("refusing it allocated %v times: nothing should be lexed", n)
	}
}

// After lexing, the tokens the lexer made are counted at 640 bytes each:
// a budget one byte short of text + tokens·640 is refused, that sum is not.
// "a, " counts 3 (a blank before the a) and makes fewer tokens than 2.5
// a counted token, so the check before lexing passes both.
func TestTokensRefusedByBudgetAfterLexing(t *testing.T) {
	data := []byte("x: [" + strings.Repeat("a, ", 1000) + "a]\n")
	n := int64(len(lexer.Tokenize(string(data))))
	cost := int64(len(data))*12 + n*640
	if _, err := Tokens(data, membudget.Budget{Limit: 1 << 30, Available: cost}); err != nil {
		t.Fatalf("within budget: %v", err)
	}
	var e *Error
	if _, err := Tokens(data, membudget.Budget{Limit: 1 << 30, Available: cost - 1}); !errors.As(err, &e) || !strings.Contains(e.Msg, fmt.Sprintf("and %d tokens", n)) || e.Line != 1 {
		t.Fatalf("one byte short: %v, want a refusal naming %d tokens", err, n)
	}
}

// A block mapping of more than MaxKeys keys is refused at its 1,001st key
// (line 1,001 here: one key a line); a sequence of 5,000 items at the
// column of the keys that hold it, and 1,000 keys, are not.
func TestMaxKeys(t *testing.T) {
	var b strings.Builder
	for i := range 1001 {
		fmt.Fprintf(&b, "k%d: a\n", i)
	}
	var e *Error
	if _, err := Tokens([]byte(b.String()), membudget.Of(0, 0)); !errors.As(err, &e) || e.Line != 1001 || e.Column != 1 || !strings.Contains(e.Msg, "more than 1000 keys") {
		t.Errorf("1,001 keys: %v, want refused at line 1001 column 1", err)
	}
	ok := strings.Join(strings.Split(b.String(), "\n")[:1000], "\n") + "\ntargets:\n" + strings.Repeat("- a: 1\n  b: 2\n", 5000)
	if err := Check([]byte(ok[strings.Index(ok, "k1:"):])); err != nil {
		t.Errorf("1,000 keys and 5,000 items: %v", err)
	}
}
