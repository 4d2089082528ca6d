// Package yamlbound bounds a YAML document before it is parsed: nesting
// depth, token count and alias count, from goccy/go-yaml's lexer (linear
// time). goccy's parser takes time and memory quadratic in the nesting
// depth (20,000 nested flow sequences, 40 KB, took 2 s and 630 MB; 40,000
// ran out of memory), so a deep document must be refused before the parse.
// infscale's YAML (the configuration, a behavior) nests a few levels.
package yamlbound

import (
	"fmt"
	"math"

	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/token"

	"github.com/infscale/infscale/internal/membudget"
)

// Limits, far above what infscale's files need (a configuration nests 6
// levels; 10,000 targets are about 380,000 tokens).
const (
	// MaxDepth is the deepest nesting allowed: flow collections ([...],
	// {...}) plus block levels (indentation and "- " entries).
	MaxDepth = 64
	// MaxTokens bounds the document's tokens (its node count), through
	// tokenBound's count from the bytes (about twice the tokens of a real
	// configuration): 2^20, some 13,000 targets written in flow style
	// (38 tokens, counted about 80) and more in block style. What the
	// parse of a document at the bound costs is in docs/evaluation/PERFORMANCE.md.
	MaxTokens = 1 << 20
	// MaxAliases bounds the aliases (*name): each copies its anchor's
	// node when decoded.
	MaxAliases = 1000
	// MaxKeys bounds the keys of one block mapping: goccy's parser
	// recurses once per key of a block mapping and copies the keys after
	// it at each level (time, memory and stack quadratic in the keys:
	// 14,000 keys took 72 MB of stack and heap). infscale's mappings have
	// a few dozen keys.
	MaxKeys = 1000
	// TokensPerTarget is what tokenBound counts for a target (name, a
	// quoted selector, two metrics and max: 38 tokens in flow style,
	// counted about 80), for messages.
	TokensPerTarget = 80
)

// Error is a limit exceeded at a 1-based line and column.
type Error struct {
	Line, Column int
	Msg          string
}

func (e *Error) Error() string { return fmt.Sprintf("line %d, column %d: %s", e.Line, e.Column, e.Msg) }

// What a parse costs, in bytes of live heap, the upper bounds of what was
// measured on the costliest shapes (pkg/config's TestParseCostModel; docs/evaluation/PERFORMANCE.md):
// goccy's lexer holds the text as runes beside its copies, each token is a
// struct with its position, and the parse adds an AST node and the decoded
// value or problem per token.
const (
	// BytesPerByte is the cost of the text itself (9.5 measured on one
	// long scalar or comment, with a fifth more for the measurement's noise).
	BytesPerByte = 12
	// LexBytesPerCountedToken is the lexer's cost per token of
	// tokenBound's count (247 measured, one-character block items; a
	// fifth more kept).
	LexBytesPerCountedToken = 320
	// ParseBytesPerToken is the whole parse's cost per token the lexer
	// made, decoding included (486 measured, a flow list of one-character
	// items, each a problem; a fifth more kept; a real target's tokens
	// cost about 210).
	ParseBytesPerToken = 640
)

// Tokens returns the document's tokens, for goccy's parser.Parse (what
// parser.ParseBytes would make again: a third of loading a 10,000-target
// configuration), or an *Error when data nests deeper than MaxDepth, has
// more than MaxTokens tokens or MaxAliases aliases, or its parse could
// take more than budget.Available bytes (the cost model above); the
// tokens are nil with an error. A syntax error the lexer finds is left to
// the parser (nil error). Block depth is counted as the stack of
// indentation columns of "- " entries and mapping keys, so "- - - x" on
// one line nests three levels.
//
// Nothing is built before the document's tokens are bounded from its bytes
// (tokenBound: no allocation): goccy's lexer builds every token of the
// document in one call (a 10 MB flow list of one-character items took
// 2.0 GB), so a document whose bound passes MaxTokens, or whose lexing
// could pass the budget, is refused there, at the line and column where the
// count passes. After lexing, the tokens made are counted against the
// whole parse's cost.
func Tokens(data []byte, budget membudget.Budget) (token.Tokens, error) {
	text := int64(len(data)) * BytesPerByte
	limit, byMemory := MaxTokens, false
	if budget.Available < math.MaxInt64 {
		if n := (budget.Available - text) / LexBytesPerCountedToken; n < int64(limit) {
			limit, byMemory = int(max(n, 0)), true
		}
	}
	if line, col, _, over := tokenBound(data, limit); over {
		if byMemory {
			// Price the whole file (one more scan, no allocation), not
			// the part read when the budget passed.
			_, _, counted, _ := tokenBound(data, math.MaxInt)
			return nil, &Error{Line: line, Column: col, Msg: overBudget(budget, text+int64(counted)*LexBytesPerCountedToken,
				fmt.Sprintf("lexing its %d bytes (about %d tokens by the count from its bytes)", len(data), counted))}
		}
		return nil, &Error{Line: line, Column: col,
			Msg: fmt.Sprintf("more than %d YAML tokens by here: not a configuration (about %d targets at most; docs/evaluation/PERFORMANCE.md)", MaxTokens, MaxTokens/TokensPerTarget)}
	}
	toks := lexer.Tokenize(string(data))
	if budget.Available < math.MaxInt64 {
		if cost := text + int64(len(toks))*ParseBytesPerToken; cost > budget.Available {
			e := &Error{Line: 1, Column: 1, Msg: overBudget(budget, cost, fmt.Sprintf("parsing its %d bytes and %d tokens", len(data), len(toks)))}
			if len(toks) > 0 { // where the tokens pass the budget
				at := toks[min(max((budget.Available-text)/ParseBytesPerToken, 0), int64(len(toks)-1))]
				e.Line, e.Column = at.Position.Line, at.Position.Column
			}
			return nil, e
		}
	}
	c := checker{}
	for i, tk := range toks {
		if err := c.add(tk, i); err != nil {
			return nil, err
		}
	}
	return toks, nil
}

// overBudget says that what (lexing, parsing the file) could take cost
// bytes, more than the budget leaves, and what to do.
func overBudget(b membudget.Budget, cost int64, what string) string {
	mib := func(n int64) float64 { return float64(n) / (1 << 20) }
	return fmt.Sprintf("%s could take up to %.1f MiB, more than the %.1f MiB this process may use for it (its memory limit %.0f MiB, GOMEMLIMIT: 90%% of the container's limit unless given; %.1f MiB in use; an eighth and 12 MiB kept free); the budget passes here: "+
		"give it more memory (the chart's resources.limits.memory) or split the targets across instances; docs/evaluation/PERFORMANCE.md gives the cost per target",
		what, mib(cost), mib(b.Available), mib(b.Limit), mib(b.Used))
}

// tokenBound bounds the tokens goccy's lexer makes of data from above
// without lexing it, against limit: every token starts at a non-blank byte after a blank
// one (counted 1) or at or just after an indicator character (counted 2:
// the indicator's own token and the one it may split off). It returns the
// 1-based line and column of the byte where the bound first passes
// limit, the count so far (the whole of data's when it does not pass),
// and whether it does. A real configuration counts about twice
// its tokens (quoted selectors are full of indicator characters).
func tokenBound(data []byte, limit int) (line, col, n int, over bool) {
	line, start := 1, 0
	blank := true
	for i, c := range data {
		switch c {
		case ' ', '\t', '\r':
			blank = true
			continue
		case '\n':
			blank = true
			line, start = line+1, i+1
			continue
		case '-', '?', ':', ',', '[', ']', '{', '}', '#', '&', '*', '!', '|', '>', '\'', '"', '%', '@', '`':
			n += 2
		default:
			if blank {
				n++
			}
		}
		blank = false
		if n > limit {
			return line, i - start + 1, n, true
		}
	}
	return 0, 0, n, false
}

// checker checks a token stream against the limits, one token at a time.
type checker struct {
	flow, aliases int
	block         []int // columns of the open block levels
	keys          []int // keys seen at each open block level
	prev          *token.Token
}

// add checks tk, the n-th (0-based) token of the stream.
func (c *checker) add(tk *token.Token, n int) error {
	if n >= MaxTokens { // tokenBound's bound makes this unreachable; kept as the contract
		return &Error{Line: tk.Position.Line, Column: tk.Position.Column,
			Msg: fmt.Sprintf("more than %d YAML tokens: not a configuration", MaxTokens)}
	}
	// open enters the block level at col (the level open there, or a new
	// one) and returns how many keys it has seen, counting this one if
	// key (a "- " entry may share its column with the keys of the mapping
	// that holds the sequence).
	open := func(col int, key bool) int {
		for len(c.block) > 0 && c.block[len(c.block)-1] > col {
			c.block, c.keys = c.block[:len(c.block)-1], c.keys[:len(c.keys)-1]
		}
		if len(c.block) == 0 || c.block[len(c.block)-1] != col {
			c.block, c.keys = append(c.block, col), append(c.keys, 0)
		}
		if key {
			c.keys[len(c.keys)-1]++
		}
		return c.keys[len(c.keys)-1]
	}
	switch tk.Type {
	case token.SequenceStartType, token.MappingStartType:
		c.flow++
	case token.SequenceEndType, token.MappingEndType:
		c.flow = max(c.flow-1, 0)
	case token.SequenceEntryType:
		if c.flow == 0 {
			open(tk.Position.Column, false)
		}
	case token.MappingValueType:
		if c.flow == 0 && c.prev != nil {
			if open(c.prev.Position.Column, true) > MaxKeys {
				return &Error{Line: c.prev.Position.Line, Column: c.prev.Position.Column,
					Msg: fmt.Sprintf("more than %d keys in one mapping: not a configuration (infscale's mappings have a few dozen)", MaxKeys)}
			}
		}
	case token.AliasType:
		if c.aliases++; c.aliases > MaxAliases {
			return &Error{Line: tk.Position.Line, Column: tk.Position.Column,
				Msg: fmt.Sprintf("more than %d aliases", MaxAliases)}
		}
	}
	if d := c.flow + len(c.block); d > MaxDepth {
		return &Error{Line: tk.Position.Line, Column: tk.Position.Column,
			Msg: fmt.Sprintf("nested more than %d levels deep: not a configuration (infscale's files nest a few levels)", MaxDepth)}
	}
	if tk.Type != token.SpaceType && tk.Type != token.CommentType {
		c.prev = tk
	}
	return nil
}
