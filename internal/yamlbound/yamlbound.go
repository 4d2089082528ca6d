// Package yamlbound bounds a YAML document before it is parsed: nesting
// depth, token count and alias count, from goccy/go-yaml's lexer (linear
// time). goccy's parser takes time and memory quadratic in the nesting
// depth (20,000 nested flow sequences, 40 KB, took 2 s and 630 MB; 40,000
// ran out of memory), so a deep document must be refused before the parse.
// infscale's YAML (the configuration, a behavior) nests a few levels.
package yamlbound

import (
	"fmt"

	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/token"
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

// Check returns an *Error when data nests deeper than MaxDepth or has more
// than MaxTokens tokens or MaxAliases aliases; nil otherwise (also when
// the lexer finds a syntax error: the parser reports it). Block depth is
// counted as the stack of indentation columns of "- " entries and mapping
// keys, so "- - - x" on one line nests three levels.
func Check(data []byte) error {
	_, err := Tokens(data)
	return err
}

// Tokens is Check that also returns the document's tokens, for goccy's
// parser.Parse (what parser.ParseBytes would make again: a third of
// loading a 10,000-target configuration). The tokens are nil with an
// error. Before anything is built, the document's tokens are bounded from
// its bytes (tokenBound: no allocation); goccy's lexer builds every token
// of the document in one call (a 10 MB flow list of one-character items
// took 2.0 GB before the old count could refuse it), so a document whose
// bound passes MaxTokens is refused there.
func Tokens(data []byte) (token.Tokens, error) {
	if line, col, over := tokenBound(data); over {
		return nil, &Error{Line: line, Column: col,
			Msg: fmt.Sprintf("more than %d YAML tokens by here: not a configuration (about %d targets at most; docs/evaluation/PERFORMANCE.md)", MaxTokens, MaxTokens/TokensPerTarget)}
	}
	toks := lexer.Tokenize(string(data))
	c := checker{}
	for i, tk := range toks {
		if err := c.add(tk, i); err != nil {
			return nil, err
		}
	}
	return toks, nil
}

// tokenBound bounds the tokens goccy's lexer makes of data from above
// without lexing it: every token starts at a non-blank byte after a blank
// one (counted 1) or at or just after an indicator character (counted 2:
// the indicator's own token and the one it may split off). It returns the
// 1-based line and column of the byte where the bound first passes
// MaxTokens, and whether it does. A real configuration counts about twice
// its tokens (quoted selectors are full of indicator characters).
func tokenBound(data []byte) (line, col int, over bool) {
	n, line, start := 0, 1, 0
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
		if n > MaxTokens {
			return line, i - start + 1, true
		}
	}
	return 0, 0, false
}

// checker checks a token stream against the limits, one token at a time.
type checker struct {
	flow, aliases int
	block         []int // columns of the open block levels
	prev          *token.Token
}

// add checks tk, the n-th (0-based) token of the stream.
func (c *checker) add(tk *token.Token, n int) error {
	if n >= MaxTokens { // tokenBound's bound makes this unreachable; kept as the contract
		return &Error{Line: tk.Position.Line, Column: tk.Position.Column,
			Msg: fmt.Sprintf("more than %d YAML tokens: not a configuration", MaxTokens)}
	}
	open := func(col int) {
		for len(c.block) > 0 && c.block[len(c.block)-1] >= col {
			c.block = c.block[:len(c.block)-1]
		}
		c.block = append(c.block, col)
	}
	switch tk.Type {
	case token.SequenceStartType, token.MappingStartType:
		c.flow++
	case token.SequenceEndType, token.MappingEndType:
		c.flow = max(c.flow-1, 0)
	case token.SequenceEntryType:
		if c.flow == 0 {
			open(tk.Position.Column)
		}
	case token.MappingValueType:
		if c.flow == 0 && c.prev != nil {
			open(c.prev.Position.Column)
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
