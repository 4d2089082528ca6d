package main

import (
	"testing"
)

// TestFleetRefusesBadControlAndTokens: --control is checked as --listen is
// (exit 2 naming the flag, not a listen error at exit 1), and simulated
// requests longer than max_model_len, which vLLM refuses and the fleet's
// replicas would hold waiting forever, are refused. By hand: the default
// replica serves Meta-Llama-3-8B, whose config.json gives a context of
// 8192 tokens; 8000 + 193 = 8193 is one above it.
func TestFleetRefusesBadControlAndTokens(t *testing.T) {
	wantRefused(t, []string{"fleet", "--control", "nonsense"}, nil,
		`--control "nonsense": must be host:port`, "or off for no fault-drill API")
	wantRefused(t, []string{"fleet", "--prompt-tokens", "8000", "--output-tokens", "193"}, nil,
		"--prompt-tokens 8000 + --output-tokens 193 = 8193 tokens: above max_model_len 8192", "give fewer tokens")
	wantRefused(t, []string{"fleet", "--prompt-tokens", "10000000"}, nil, "above max_model_len 8192")
}
