package replica

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestHFConfigCatalog reads the config.json of each data-set model
// (testdata/hf, the shape keys as the repositories publish them) and checks
// it describes the same model as the catalog entry: the same shape, hence
// the same parameter counts and KV bytes per token.
func TestHFConfigCatalog(t *testing.T) {
	for _, tc := range []struct{ file, catalog string }{
		{"llama-2-7b-hf.json", "llama-2-7b"},
		{"qwen2.5-7b-instruct.json", "qwen2.5-7b"},
		{"mistral-nemo-instruct-2407.json", "mistral-nemo-12b"},
		{"yi-34b.json", "yi-34b"},
		{"llama-3.1-70b-instruct.json", "llama-3.1-70b"},
		{"llama-4-scout-17b-16e-instruct-fp8-dynamic.json", "llama-4-scout-17b-16e-fp8"},
	} {
		got, err := LoadHFConfig(filepath.Join("testdata", "hf", tc.file))
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		want, err := LookupModel(tc.catalog)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.EqualFold(got.HFRepo, want.HFRepo) {
			t.Errorf("%s: name %q, want %q", tc.file, got.HFRepo, want.HFRepo)
		}
		got.Name, got.HFRepo, got.NominalParams = want.Name, want.HFRepo, want.NominalParams
		if got != want {
			t.Errorf("%s:\n got %+v\nwant %+v", tc.file, got, want)
		}
	}
}

// TestHFConfigScout spells out what the Llama 4 Scout FP8 config gives:
// 16 experts, top-1, a shared expert of the expert size in all 48 layers,
// FP8 weights from compressed-tensors (8-bit float weights), chunked
// attention (8192) on the 36 layers no_rope_layers marks 1 (every fourth
// layer is global).
func TestHFConfigScout(t *testing.T) {
	m, err := LoadHFConfig(filepath.Join("testdata", "hf", "llama-4-scout-17b-16e-instruct-fp8-dynamic.json"))
	if err != nil {
		t.Fatal(err)
	}
	if m.Experts != 16 || m.ExpertsPerToken != 1 || m.SharedExpertIntermediate != 8192 || m.DType != DTypeFP8 || m.SlidingWindow != 8192 || m.SlidingLayers != 36 || m.HeadDim != 128 || m.KVHeads != 8 {
		t.Errorf("scout: %+v", m)
	}
}

// TestHFConfigErrors: an unknown key (an architecture infscale may not
// model, such as MLA's kv_lora_rank) and a missing required key are
// errors naming the key, with the line and column of the unknown one.
func TestHFConfigErrors(t *testing.T) {
	data := []byte(`{
  "hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32,
  "intermediate_size": 11008, "vocab_size": 32000,
  "kv_lora_rank": 512
}`)
	_, err := ParseHFConfig("x/config.json", "x", data)
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Key != "kv_lora_rank" || ce.Line != 4 || ce.Col != 3 {
		t.Fatalf("err = %v, want a ConfigError for kv_lora_rank at 4:3", err)
	}
	_, err = ParseHFConfig("y.json", "y", []byte(`{"hidden_size": 4096, "num_attention_heads": 32, "intermediate_size": 1, "vocab_size": 2}`))
	if err == nil || !strings.Contains(err.Error(), "num_hidden_layers: missing") {
		t.Fatalf("err = %v, want num_hidden_layers missing", err)
	}
	_, err = ParseHFConfig("z.json", "z", []byte(`{"hidden_size": 4096, "num_hidden_layers": 2, "num_attention_heads": 32, "intermediate_size": 1, "vocab_size": 2, "quantization_config": {"quant_method": "hqq"}}`))
	if !errors.As(err, &ce) || ce.Key != "quantization_config" {
		t.Fatalf("err = %v, want a quantization_config error", err)
	}
	// Llama 4's moe_layers must list every interleave_moe_layer_step-th
	// layer: 4 layers at step 2 are 2 MoE layers, not 3.
	_, err = ParseHFConfig("m.json", "m", []byte(`{"hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 2, "intermediate_size": 8, "vocab_size": 2,
  "num_local_experts": 4, "num_experts_per_tok": 1, "interleave_moe_layer_step": 2, "moe_layers": [1, 2, 3]}`))
	if !errors.As(err, &ce) || ce.Key != "moe_layers" || !strings.Contains(err.Error(), "3 layers listed: want 2") {
		t.Fatalf("err = %v, want a moe_layers error (3 listed, want 2)", err)
	}
}

// TestHFConfigValueErrors: a value of the wrong JSON type is named with the
// kind wanted (it said "want *float64", then "missing" for the key that
// was there), and num_key_value_heads must divide num_attention_heads
// (32 query heads in groups of 5 is no grouped-query attention: it was
// read as 5 KV heads, a KV cache 5/32 of Llama-2-7B's, exit 0).
func TestHFConfigValueErrors(t *testing.T) {
	base := `"num_hidden_layers": 32, "num_attention_heads": 32, "intermediate_size": 11008, "vocab_size": 32000`
	_, err := ParseHFConfig("s.json", "s", []byte(`{"hidden_size": "4096", `+base+`}`))
	var ce *ConfigError
	if !errors.As(err, &ce) || ce.Key != "hidden_size" || !strings.Contains(err.Error(), `hidden_size: "4096": want a number`) {
		t.Errorf("err = %v, want hidden_size: \"4096\": want a number", err)
	}
	if err != nil && strings.Contains(err.Error(), "missing") {
		t.Errorf("err = %v: a key of the wrong type is not missing", err)
	}
	_, err = ParseHFConfig("b.json", "b", []byte(`{"hidden_size": 4096, "tie_word_embeddings": "no", `+base+`}`))
	if err == nil || !strings.Contains(err.Error(), `tie_word_embeddings: "no": want true or false`) {
		t.Errorf("err = %v, want tie_word_embeddings: want true or false", err)
	}
	for kv, want := range map[string]string{
		"5":  "num_key_value_heads: 5 does not divide num_attention_heads 32",
		"64": "num_key_value_heads: 64 does not divide num_attention_heads 32",
	} {
		_, err := ParseHFConfig("k.json", "k", []byte(`{"hidden_size": 4096, "num_key_value_heads": `+kv+`, `+base+`}`))
		if !errors.As(err, &ce) || ce.Key != "num_key_value_heads" || !strings.Contains(err.Error(), want) {
			t.Errorf("num_key_value_heads %s: err = %v, want %q", kv, err, want)
		}
	}
	// 0 given is not absent: no KV heads, or an empty head, is no decoder;
	// null is the default (multi-head attention, hidden / heads).
	for _, key := range []string{"num_key_value_heads", "head_dim"} {
		_, err := ParseHFConfig("z.json", "z", []byte(`{"hidden_size": 4096, "`+key+`": 0, `+base+`}`))
		if !errors.As(err, &ce) || ce.Key != key || !strings.Contains(err.Error(), key+": 0: want at least 1") {
			t.Errorf("%s 0: err = %v, want %s: 0: want at least 1", key, err, key)
		}
	}
	if m, err := ParseHFConfig("n.json", "n", []byte(`{"hidden_size": 4096, "num_key_value_heads": null, "head_dim": null, `+base+`}`)); err != nil || m.KVHeads != 32 || m.HeadDim != 128 {
		t.Errorf("null KV heads and head_dim: %d, %d, err %v; want 32 (multi-head) and 4096/32 = 128", m.KVHeads, m.HeadDim, err)
	}
	// 8 KV heads of 32 query heads (Llama-3-8B's groups of 4) reads.
	if m, err := ParseHFConfig("g.json", "g", []byte(`{"hidden_size": 4096, "num_key_value_heads": 8, `+base+`}`)); err != nil || m.KVHeads != 8 {
		t.Errorf("GQA 32/8: KV heads %d, err %v; want 8", m.KVHeads, err)
	}
}

// TestHFConfigSyntaxErrors: malformed JSON is named by file:line:col
// (the stray comma is the 27th character of line 3; a truncated file
// ends at 1:18, after its 17 bytes; the second value starts at 1:20).
func TestHFConfigSyntaxErrors(t *testing.T) {
	for _, c := range []struct{ data, want string }{
		{"{\n  \"hidden_size\": 4096,\n  \"num_hidden_layers\": 32,,\n}\n", "c.json:3:27: invalid character ','"},
		{`{"hidden_size": 1`, "c.json:1:18: unexpected end of the JSON (a truncated file?)"},
		{`{"hidden_size": 1} {}`, "c.json:1:20: data after the JSON value"},
	} {
		_, err := ParseHFConfig("c.json", "c", []byte(c.data))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: err = %v, want %q", c.data, err, c.want)
		}
	}
}

// TestHFConfigDuplicateKey: a key given twice in one object (an edit left
// the old line in) is refused at the second copy naming the first, here
// num_attention_heads at 2:3 and 3:3, text_config's vocab_size at 4:19
// and 4:36 (2 spaces, 13 bytes of "text_config", ": {" and 12 of
// "vocab_size", then ": 1, "); encoding/json, like Transformers, read the last (64 heads:
// twice Llama-3-8B's KV cache, exit 0).
func TestHFConfigDuplicateKey(t *testing.T) {
	data := []byte(`{"hidden_size": 4096, "num_hidden_layers": 32, "intermediate_size": 14336, "vocab_size": 128256,
  "num_attention_heads": 32, "num_key_value_heads": 8,
  "num_attention_heads": 64,
  "text_config": {"vocab_size": 1, "vocab_size": 2}}`)
	_, err := ParseHFConfig("d.json", "d", data)
	for _, want := range []string{
		"d.json:3:3: num_attention_heads: key given twice (first at 2:3); give it once",
		"d.json:4:36: text_config.vocab_size: key given twice (first at 4:19); give it once",
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v\nwant %q", err, want)
		}
	}
}

// TestHFConfigZeroCounts: a required count given as 0 (layers, hidden,
// heads, vocab) is refused at its key, and a hidden size below the heads
// (16 over 32 heads floors to a head of 0) at hidden_size: it was "an
// incomplete shape (... heads 0 ...)" naming no key or position.
func TestHFConfigZeroCounts(t *testing.T) {
	all := map[string]string{"num_hidden_layers": "32", "hidden_size": "4096", "num_attention_heads": "32", "vocab_size": "32000"}
	for _, zero := range []string{"num_hidden_layers", "hidden_size", "num_attention_heads", "vocab_size"} {
		body := `{"intermediate_size": 11008`
		for _, k := range []string{"num_hidden_layers", "hidden_size", "num_attention_heads", "vocab_size"} {
			v := all[k]
			if k == zero {
				v = "0"
			}
			body += `, "` + k + `": ` + v
		}
		_, err := ParseHFConfig("z.json", "z", []byte(body+"}"))
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Key != zero || ce.Line != 1 || !strings.Contains(err.Error(), zero+": 0: want at least 1") {
			t.Errorf("%s 0: err = %v; want z.json:1:C: %s: 0: want at least 1", zero, err, zero)
		}
	}
	// {"intermediate_size": 64, "hidden_size": 16, ...: hidden_size's key at
	// byte 26, column 27.
	_, err := ParseHFConfig("h.json", "h", []byte(`{"intermediate_size": 64, "hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 32, "vocab_size": 100}`))
	if err == nil || !strings.Contains(err.Error(), "h.json:1:27: hidden_size: 16 over num_attention_heads 32 is a head of 0 dimensions") {
		t.Errorf("hidden 16 over 32 heads: err = %v; want h.json:1:27: hidden_size: ... a head of 0 dimensions", err)
	}
}

// TestHFConfigCountBounds: a count above 2^30 is refused naming the bound
// (it said "want a whole number >= 0" of 1e15, which is one), and an
// intermediate_size given but refused, or given as 0, is not also
// "missing" (it was said twice: its value, then missing).
func TestHFConfigCountBounds(t *testing.T) {
	base := `"num_hidden_layers": 32, "num_attention_heads": 32, "vocab_size": 32000`
	for body, want := range map[string]string{
		`{"hidden_size": 1e15, "intermediate_size": 11008, ` + base + `}`:                                                                       "hidden_size: 1e+15: want a whole number 0 to 1073741824",
		`{"hidden_size": 4096, "intermediate_size": 11008, "num_hidden_layers": 2199023255552, "num_attention_heads": 32, "vocab_size": 32000}`: "num_hidden_layers: 2.199023255552e+12: want a whole number 0 to 1073741824",
		`{"hidden_size": 4096, "intermediate_size": 11008.5, ` + base + `}`:                                                                     "intermediate_size: 11008.5: want a whole number 0 to 1073741824",
		`{"hidden_size": 4096, "intermediate_size": 0, ` + base + `}`:                                                                           "intermediate_size: 0: want at least 1",
		`{"hidden_size": 4096, ` + base + `}`:                                                                                                   "intermediate_size: missing: a decoder needs its MLP size",
	} {
		_, err := ParseHFConfig("c.json", "c", []byte(body))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: err = %v; want %q", body, err, want)
			continue
		}
		if n := strings.Count(err.Error(), "intermediate_size"); n > 1 {
			t.Errorf("%s: intermediate_size said %d times: %v", body, n, err)
		}
	}
}

// TestHFConfigNameControl: a _name_or_path with a control character (a
// line break, a tab) is refused at its key: it names the model in every
// output, and a line break split gpu's first line in two.
func TestHFConfigNameControl(t *testing.T) {
	base := `"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "intermediate_size": 11008, "vocab_size": 32000`
	for _, name := range []string{`evil\nname`, `a\tb`, `x\u0000y`} {
		_, err := ParseHFConfig("n.json", "n", []byte(`{"_name_or_path": "`+name+`", `+base+`}`))
		var ce *ConfigError
		if !errors.As(err, &ce) || ce.Key != "_name_or_path" || !strings.Contains(err.Error(), "n.json:1:2: _name_or_path: ") || !strings.Contains(err.Error(), "a control character") {
			t.Errorf("%s: err = %v; want n.json:1:2: _name_or_path: ... a control character", name, err)
		}
	}
	if m, err := ParseHFConfig("n.json", "n", []byte(`{"_name_or_path": "meta-llama/Llama-3.1-8B", `+base+`}`)); err != nil || m.Name != "meta-llama/Llama-3.1-8B" {
		t.Errorf("a repository name: %q, %v", m.Name, err)
	}
}
