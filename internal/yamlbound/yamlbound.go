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
// levels; 50,000 targets are about 1.5 million tokens).
const (
	// MaxDepth is the deepest nesting allowed: flow collections ([...],
	// {...}) plus block levels (indentation and "- " entries).
	MaxDepth = 64
	// MaxTokens bounds the document's tokens (its node count).
	MaxTokens = 4 << 20
	// MaxAliases bounds the aliases (*name): each copies its anchor's
	// node when decoded.
	MaxAliases = 1000
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
// error.
func Tokens(data []byte) (token.Tokens, error) {
	toks := lexer.Tokenize(string(data))
	if err := check(toks); err != nil {
		return nil, err
	}
	return toks, nil
}

func check(toks token.Tokens) error {
	if len(toks) > MaxTokens {
		tk := toks[MaxTokens]
		return &Error{Line: tk.Position.Line, Column: tk.Position.Column,
			Msg: fmt.Sprintf("more than %d YAML tokens: not a configuration", MaxTokens)}
	}
	flow, aliases := 0, 0
	var block []int // columns of the open block levels
	var prev *token.Token
	open := func(col int) {
		for len(block) > 0 && block[len(block)-1] >= col {
			block = block[:len(block)-1]
		}
		block = append(block, col)
	}
	for _, tk := range toks {
		switch tk.Type {
		case token.SequenceStartType, token.MappingStartType:
			flow++
		case token.SequenceEndType, token.MappingEndType:
			flow = max(flow-1, 0)
		case token.SequenceEntryType:
			if flow == 0 {
				open(tk.Position.Column)
			}
		case token.MappingValueType:
			if flow == 0 && prev != nil {
				open(prev.Position.Column)
			}
		case token.AliasType:
			if aliases++; aliases > MaxAliases {
				return &Error{Line: tk.Position.Line, Column: tk.Position.Column,
					Msg: fmt.Sprintf("more than %d aliases", MaxAliases)}
			}
		}
		if d := flow + len(block); d > MaxDepth {
			return &Error{Line: tk.Position.Line, Column: tk.Position.Column,
				Msg: fmt.Sprintf("nested more than %d levels deep: not a configuration (infscale's files nest a few levels)", MaxDepth)}
		}
		if tk.Type != token.SpaceType && tk.Type != token.CommentType {
			prev = tk
		}
	}
	return nil
}
