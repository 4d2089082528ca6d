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

// TestHFConfigNotObject: a config.json that is an array, a number or a
// string said "json: cannot unmarshal array into Go value of type
// map[string]json.RawMessage"; it names the JSON kind and what is wanted,
// as a calibration file's error does.
func TestHFConfigNotObject(t *testing.T) {
	for data, kind := range map[string]string{"[1]": "array", "4096": "number", `"x"`: "string"} {
		_, err := ParseHFConfig("c.json", "c", []byte(data))
		want := "c.json:1:1: the file is a JSON " + kind + ": want an object (a Hugging Face config.json)"
		if err == nil || err.Error() != want {
			t.Errorf("%s: %v, want %q", data, err, want)
		}
	}
}
