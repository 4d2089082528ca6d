package replica

import (
	"strings"
	"testing"
)

// TestHFConfigExpertsPerTokenOnce: a MoE config without
// num_experts_per_tok (or with it null or a string) was reported twice,
// "missing: a decoder needs it" (or the type error) and then "0: want 1 to
// the 8 experts"; one problem is one error. An explicit 0 or 9 of 8
// experts is still refused with the range.
func TestHFConfigExpertsPerTokenOnce(t *testing.T) {
	const base = `{"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 8, "vocab_size": 2, "num_local_experts": 8`
	for extra, want := range map[string]string{
		``:                              "num_experts_per_tok: missing",
		`, "num_experts_per_tok": null`: "num_experts_per_tok: missing",
		`, "num_experts_per_tok": "2"`:  `num_experts_per_tok: "2": want`,
		`, "num_experts_per_tok": 0`:    "num_experts_per_tok: 0: want 1 to the 8 experts",
		`, "num_experts_per_tok": 9`:    "num_experts_per_tok: 9: want 1 to the 8 experts",
	} {
		_, err := ParseHFConfig("m.json", "m", []byte(base+extra+"}"))
		if err == nil || !strings.Contains(err.Error(), want) || strings.Count(err.Error(), "num_experts_per_tok") != 1 {
			t.Errorf("%s: %v, want one error with %q", extra, err, want)
		}
	}
}
