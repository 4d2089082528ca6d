package replica

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"unicode"

	"github.com/infscale/infscale/internal/boundedfile"
	"github.com/infscale/infscale/internal/jsonpos"
)

// hfShapeKeys are the config.json keys ParseHFConfig reads into a Model.
var hfShapeKeys = []string{
	"num_hidden_layers", "hidden_size", "intermediate_size", "num_attention_heads", "num_key_value_heads",
	"head_dim", "vocab_size", "tie_word_embeddings", "torch_dtype", "dtype", "attention_bias",
	"num_local_experts", "num_experts", "n_routed_experts", "num_experts_per_tok", "moe_intermediate_size",
	"shared_expert_intermediate_size", "n_shared_experts", "interleave_moe_layer_step", "intermediate_size_mlp",
	"sliding_window", "use_sliding_window", "max_window_layers", "layer_types", "attention_chunk_size",
	"no_rope_layers", "moe_layers", "quantization_config", "text_config", "architectures", "model_type", "_name_or_path",
}

// hfIgnoredKeys are config.json keys that do not change weights, KV or
// step time (tokens, positions, norms, initialisation, generation and
// library bookkeeping). A key in neither list is refused: it may be an
// architecture infscale does not model (MLA's kv_lora_rank, a Mamba
// layer's state_size, ...).
var hfIgnoredKeys = []string{
	"bos_token_id", "eos_token_id", "pad_token_id", "max_position_embeddings", "rope_theta", "rope_scaling",
	"rope_parameters", "rms_norm_eps", "layer_norm_eps", "layer_norm_epsilon", "hidden_act", "initializer_range",
	"transformers_version", "use_cache", "attention_dropout", "hidden_dropout", "mlp_bias", "pretraining_tp",
	"output_router_logits", "router_aux_loss_coef", "router_jitter_noise", "router_z_loss_coef", "norm_topk_prob",
	"decoder_sparse_step", "mlp_only_layers", "qkv_bias", "use_qk_norm", "attn_temperature_tuning", "floor_scale",
	"attn_scale", "for_llm_compressor", "auto_map", "id2label", "label2id", "torchscript", "is_encoder_decoder",
	"tokenizer_class", "chat_template", "processor_class", "generation_config", "use_return_dict",
	"vision_config", "image_token_index", "boi_token_index", "eoi_token_index", "projector_hidden_act",
	"vision_feature_layer", "vision_feature_select_strategy", "multimodal_projector_bias", "spatial_merge_size",
	"image_token_id", "tie_embeddings", "partial_rotary_factor", "rope_interleave", "sliding_window_pattern",
	"embedding_multiplier", "logits_scaling", "residual_multiplier", "attention_multiplier", "cache_implementation",
	"final_logit_softcapping", "attn_logit_softcapping", "query_pre_attn_scalar", "output_attentions",
	"output_hidden_states", "return_dict", "original_max_position_embeddings", "max_length", "num_beams",
}

// ConfigError is a config.json that cannot be expressed as a Model: the
// file, the line and column of the offending key, the key and why.
type ConfigError struct {
	File      string
	Line, Col int
	Key       string
	Msg       string
}

func (e *ConfigError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d:%d: %s: %s", e.File, e.Line, e.Col, e.Key, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", e.File, e.Key, e.Msg)
}

// MaxHFConfigBytes bounds a config.json (a model's is a few kB; a
// multimodal one's tens of kB).
const MaxHFConfigBytes = 4 << 20

// ReadHFConfig returns the bytes of the config.json at path: a regular
// file of at most MaxHFConfigBytes (a FIFO would block the read,
// /dev/zero exhaust memory). Errors: os.Open's (fs.ErrNotExist as it
// is), or one naming path and what is wrong.
func ReadHFConfig(path string) ([]byte, error) {
	return boundedfile.Read(path, MaxHFConfigBytes, "a model's config.json", "want a Hugging Face config.json")
}

// LoadHFConfig reads a Hugging Face config.json (ParseHFConfig). The
// model's name is its _name_or_path, else the directory holding the file
// (a snapshot directory is named after the repository), else the file's
// base name without .json.
func LoadHFConfig(path string) (Model, error) {
	data, err := ReadHFConfig(path)
	if err != nil {
		return Model{}, err
	}
	name := strings.TrimSuffix(filepath.Base(path), ".json")
	if name == "config" {
		name = filepath.Base(filepath.Dir(path))
	}
	return ParseHFConfig(path, name, data)
}

// ParseHFConfig reads a decoder-only transformer's shape from a Hugging
// Face config.json: dense or MoE (num_local_experts / num_experts /
// n_routed_experts, num_experts_per_tok, moe_intermediate_size, shared
// experts, interleave_moe_layer_step), GQA (num_key_value_heads), head_dim,
// the weights' dtype (torch_dtype, or FP8/INT8/INT4 from
// quantization_config), sliding-window layers (sliding_window with
// layer_types or max_window_layers, Llama 4's attention_chunk_size). A
// multimodal config's text_config is read (the vision tower is ignored).
// name names the model when the file has no _name_or_path. Errors: a
// *ConfigError naming file:line:col and the key for a missing or invalid
// value or a key given twice in one object, or a key infscale does not know (an architecture it may not
// model).
func ParseHFConfig(file, name string, data []byte) (Model, error) {
	ix, err := jsonpos.New(data)
	if err != nil {
		var se *json.SyntaxError
		var te *jsonpos.TrailingError
		switch {
		case errors.As(err, &se):
			line, col := jsonpos.LineCol(data, se.Offset)
			return Model{}, fmt.Errorf("%s:%d:%d: %w (want a Hugging Face config.json)", file, line, col, se)
		case errors.As(err, &te):
			line, col := jsonpos.LineCol(data, te.Offset)
			return Model{}, fmt.Errorf("%s:%d:%d: %w", file, line, col, te)
		case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
			line, col := jsonpos.LineCol(data, int64(len(data)))
			return Model{}, fmt.Errorf("%s:%d:%d: unexpected end of the JSON (a truncated file?); want a Hugging Face config.json", file, line, col)
		}
		return Model{}, fmt.Errorf("%s: %w", file, err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		// The value is well-formed (jsonpos read it): not an object.
		var ue *json.UnmarshalTypeError
		if errors.As(err, &ue) {
			at := len(data) - len(bytes.TrimLeft(data, " \t\r\n"))
			line, col := jsonpos.LineCol(data, int64(at))
			return Model{}, fmt.Errorf("%s:%d:%d: the file is a JSON %s: want an object (a Hugging Face config.json)", file, line, col, ue.Value)
		}
		return Model{}, fmt.Errorf("%s: want a JSON object: %w", file, err)
	}
	cerr := func(path, msg string) *ConfigError {
		e := &ConfigError{File: file, Key: path, Msg: msg}
		if p := ix.Lookup(path); p.Key > 0 || p.Value > 0 {
			e.Line, e.Col = ix.LineCol(max(p.Key, 0))
		}
		return e
	}
	var errs []error
	for _, d := range ix.Duplicates() {
		line, col := ix.LineCol(d.First.Key)
		e := &ConfigError{File: file, Key: d.Path, Msg: fmt.Sprintf("key given twice (first at %d:%d); give it once (Transformers would read the last silently)", line, col)}
		e.Line, e.Col = ix.LineCol(d.Second.Key)
		errs = append(errs, e)
	}
	known := func(obj map[string]json.RawMessage, prefix string) {
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if !slices.Contains(hfShapeKeys, k) && !slices.Contains(hfIgnoredKeys, k) {
				errs = append(errs, cerr(prefix+k, "unknown config.json key: infscale cannot tell whether it changes the architecture (weights, KV cache or step time); remove it if it does not, or describe the model with a supported architecture"))
			}
		}
	}
	known(top, "")
	shape, prefix := top, ""
	if raw, ok := top["text_config"]; ok {
		if err := json.Unmarshal(raw, &shape); err != nil {
			return Model{}, cerr("text_config", "want an object")
		}
		prefix = "text_config."
		known(shape, prefix)
	}
	get := func(key string, v any) bool {
		raw, ok := shape[key]
		if !ok || string(raw) == "null" {
			return false
		}
		if err := json.Unmarshal(raw, v); err != nil {
			errs = append(errs, cerr(prefix+key, fmt.Sprintf("%s: want %s", bytes.TrimSpace(raw), jsonWant(v))))
			return false
		}
		return true
	}
	posInt := func(key string, required bool) int {
		var f float64
		if !get(key, &f) {
			if raw, ok := shape[key]; required && (!ok || string(raw) == "null") { // a wrong type is said by get
				errs = append(errs, &ConfigError{File: file, Key: prefix + key, Msg: "missing: a decoder needs it"})
			}
			return 0
		}
		if f != math.Trunc(f) || f < 0 || f > 1<<30 {
			errs = append(errs, cerr(prefix+key, fmt.Sprintf("%v: want a whole number 0 to %d", f, 1<<30)))
			return 0
		}
		return int(f)
	}
	m := Model{Name: name, HFRepo: name}
	var np string
	raw, ok := top["_name_or_path"]
	if ok && json.Unmarshal(raw, &np) == nil && strings.ContainsFunc(np, unicode.IsControl) {
		// It names the model in every output: a line break split lines.
		errs = append(errs, cerr("_name_or_path", fmt.Sprintf("%s: a control character: want the model's repository (org/name) or path", bytes.TrimSpace(raw))))
	} else if ok && np != "" {
		m.Name, m.HFRepo = np, np
	}
	m.Layers = posInt("num_hidden_layers", true)
	m.Hidden = posInt("hidden_size", true)
	before := len(errs)
	m.Intermediate = posInt("intermediate_size", false)
	interSaid := len(errs) > before // a refused value: not also missing
	m.Heads = posInt("num_attention_heads", true)
	// An optional count given as 0 is not "absent": a decoder has no
	// layer without KV heads or with an empty head.
	nonZero := func(key string, v int) {
		if raw, ok := shape[key]; ok && v == 0 && string(raw) != "null" {
			var f float64
			if json.Unmarshal(raw, &f) == nil && f == 0 {
				errs = append(errs, cerr(prefix+key, "0: want at least 1 (leave the key out, or null, for the default)"))
			}
		}
	}
	m.KVHeads = posInt("num_key_value_heads", false)
	nonZero("num_key_value_heads", m.KVHeads)
	if m.KVHeads == 0 {
		m.KVHeads = m.Heads // multi-head attention
	} else if m.Heads > 0 && m.Heads%m.KVHeads != 0 {
		// Each KV head serves Heads/KVHeads query heads (transformers'
		// num_key_value_groups); vLLM refuses other shapes.
		errs = append(errs, cerr(prefix+"num_key_value_heads", fmt.Sprintf("%d does not divide num_attention_heads %d: want a divisor (each KV head serves an equal group of query heads)", m.KVHeads, m.Heads)))
	}
	m.HeadDim = posInt("head_dim", false)
	nonZero("head_dim", m.HeadDim)
	if m.HeadDim == 0 && m.Heads > 0 {
		m.HeadDim = m.Hidden / m.Heads // as Transformers and vLLM: floor
		if m.Hidden > 0 && m.HeadDim == 0 {
			errs = append(errs, cerr(prefix+"hidden_size", fmt.Sprintf("%d over num_attention_heads %d is a head of 0 dimensions: want hidden_size at least the heads, or give head_dim", m.Hidden, m.Heads)))
		}
	}
	m.Vocab = posInt("vocab_size", true)
	// A required count given as 0 is no decoder either (it was "an
	// incomplete shape", naming no key).
	for _, r := range []struct {
		key string
		v   int
	}{{"num_hidden_layers", m.Layers}, {"hidden_size", m.Hidden}, {"num_attention_heads", m.Heads}, {"vocab_size", m.Vocab}} {
		if _, ok := shape[r.key]; ok && r.v == 0 && !slices.ContainsFunc(errs, func(e error) bool {
			var ce *ConfigError
			return errors.As(e, &ce) && ce.Key == prefix+r.key
		}) {
			errs = append(errs, cerr(prefix+r.key, "0: want at least 1 (a decoder needs it)"))
		}
	}
	get("tie_word_embeddings", &m.TiedEmbeddings)
	get("attention_bias", &m.QKVBias)
	if mt, ok := shape["model_type"]; ok {
		// Qwen2 has q, k and v biases and Qwen3 per-head q/k norms, without
		// a key saying so.
		m.QKVBias = m.QKVBias || strings.Contains(string(mt), "qwen2")
		m.QKNorm = strings.Contains(string(mt), "qwen3")
	}
	for _, k := range []string{"num_local_experts", "num_experts", "n_routed_experts"} {
		if e := posInt(k, false); e > 0 {
			m.Experts = e
		}
	}
	if m.Experts > 1 {
		before := len(errs)
		m.ExpertsPerToken = posInt("num_experts_per_tok", true)
		saidK := len(errs) > before // missing or not a count: said once
		if mi := posInt("moe_intermediate_size", false); mi > 0 {
			m.DenseIntermediate, m.Intermediate = m.Intermediate, mi
		}
		m.SharedExpertIntermediate = posInt("shared_expert_intermediate_size", false)
		if n := posInt("n_shared_experts", false); n > 0 {
			m.SharedExpertIntermediate = n * m.Intermediate
		}
		if step := posInt("interleave_moe_layer_step", false); step > 0 {
			m.MoELayerStep = step
			// Llama 4: a shared expert of the expert size in every MoE
			// layer; dense layers use intermediate_size_mlp.
			if m.SharedExpertIntermediate == 0 {
				m.SharedExpertIntermediate = m.Intermediate
			}
			m.DenseIntermediate = posInt("intermediate_size_mlp", false)
		}
		var moeLayers []int
		if get("moe_layers", &moeLayers) {
			// Llama 4 lists its MoE layers: every step-th, as
			// interleave_moe_layer_step says (all 48 of Scout's).
			want := m.Layers / max(m.MoELayerStep, 1)
			if len(moeLayers) != want {
				errs = append(errs, cerr(prefix+"moe_layers", fmt.Sprintf("%d layers listed: want %d (num_hidden_layers %d / interleave_moe_layer_step %d); infscale models every step-th layer as MoE", len(moeLayers), want, m.Layers, max(m.MoELayerStep, 1))))
			}
		}
		if !saidK && (m.ExpertsPerToken < 1 || m.ExpertsPerToken > m.Experts) {
			errs = append(errs, cerr(prefix+"num_experts_per_tok", fmt.Sprintf("%d: want 1 to the %d experts", m.ExpertsPerToken, m.Experts)))
		}
	}
	if raw, ok := shape["intermediate_size"]; m.Intermediate == 0 && !interSaid {
		if ok && string(raw) != "null" {
			errs = append(errs, cerr(prefix+"intermediate_size", "0: want at least 1 (a decoder needs its MLP size)"))
		} else {
			errs = append(errs, &ConfigError{File: file, Key: prefix + "intermediate_size", Msg: "missing: a decoder needs its MLP size"})
		}
	}
	// Sliding-window layers.
	if w := posInt("sliding_window", false); w > 0 {
		use := true
		get("use_sliding_window", &use)
		var types []string
		switch {
		case !use:
		case get("layer_types", &types):
			m.SlidingWindow = w
			for _, t := range types {
				if t == "sliding_attention" {
					m.SlidingLayers++
				}
			}
		case posInt("max_window_layers", false) > 0 && shape["use_sliding_window"] != nil:
			m.SlidingWindow = w
			m.SlidingLayers = max(m.Layers-posInt("max_window_layers", false), 0)
		default:
			m.SlidingWindow, m.SlidingLayers = w, m.Layers
		}
	}
	if w := posInt("attention_chunk_size", false); w > 0 {
		// Llama 4: every layer but the NoPE ones (no_rope_layers 0) attends
		// within chunks.
		var nope []int
		m.SlidingWindow, m.SlidingLayers = w, m.Layers
		if get("no_rope_layers", &nope) && len(nope) > 0 {
			m.SlidingLayers = 0
			for _, v := range nope {
				if v != 0 {
					m.SlidingLayers++
				}
			}
		} else if m.Layers >= 4 {
			m.SlidingLayers = m.Layers - m.Layers/4 // one global layer in four
		}
	}
	// Weights: torch_dtype (dtype in newer files), unless quantised.
	var dt string
	if get("torch_dtype", &dt) || get("dtype", &dt) || getTop(top, "torch_dtype", &dt) {
		d, err := ParseDType(dt)
		if err != nil || d == DTypeAuto {
			errs = append(errs, cerr(prefix+"torch_dtype", fmt.Sprintf("%q: want float16, bfloat16 or float32", dt)))
		}
		m.DType = d
	}
	if dt == "float32" {
		m.DType = DTypeBF16 // served at 16 bits (vLLM's --dtype auto casts float32 to bfloat16)
	}
	if raw, ok := top["quantization_config"]; ok {
		d, msg := quantDType(raw)
		if msg != "" {
			errs = append(errs, cerr("quantization_config", msg))
		} else {
			m.DType = d
		}
	}
	if m.DType == DTypeAuto {
		m.DType = DTypeBF16
	}
	if len(errs) > 0 {
		return Model{}, errors.Join(errs...)
	}
	m.NominalParams = m.Params()
	if m.Layers <= 0 || m.Hidden <= 0 || m.Heads <= 0 || m.Vocab <= 0 || m.HeadDim <= 0 {
		return Model{}, fmt.Errorf("%s: an incomplete shape (layers %d, hidden %d, heads %d, vocab %d)", file, m.Layers, m.Hidden, m.Heads, m.Vocab)
	}
	return m, nil
}

// jsonWant names the JSON value ParseHFConfig reads into v, for errors.
func jsonWant(v any) string {
	switch v.(type) {
	case *float64:
		return "a number"
	case *bool:
		return "true or false"
	case *string:
		return "a string"
	case *[]int:
		return "a list of whole numbers"
	case *[]string:
		return "a list of strings"
	}
	return fmt.Sprintf("a %T", v)
}

func getTop(top map[string]json.RawMessage, key string, v any) bool {
	raw, ok := top[key]
	return ok && json.Unmarshal(raw, v) == nil
}

// quantDType reads the weights' number format from a quantization_config:
// quant_method fp8 (or fbgemm_fp8), compressed-tensors with 8-bit float
// weights (FP8-dynamic) or 8/4-bit integer ones, awq, gptq and bitsandbytes
// by their bits. msg says why it is not understood.
func quantDType(raw json.RawMessage) (DType, string) {
	var q struct {
		QuantMethod  string `json:"quant_method"`
		Bits         int    `json:"bits"`
		LoadIn4Bit   bool   `json:"load_in_4bit"`
		LoadIn8Bit   bool   `json:"load_in_8bit"`
		ConfigGroups map[string]struct {
			Weights struct {
				NumBits int    `json:"num_bits"`
				Type    string `json:"type"`
			} `json:"weights"`
		} `json:"config_groups"`
	}
	if err := json.Unmarshal(raw, &q); err != nil {
		return 0, "want an object with quant_method"
	}
	switch strings.ToLower(q.QuantMethod) {
	case "fp8", "fbgemm_fp8", "modelopt":
		return DTypeFP8, ""
	case "awq", "gptq", "awq_marlin", "gptq_marlin":
		switch q.Bits {
		case 4:
			return DTypeINT4, ""
		case 8:
			return DTypeINT8, ""
		}
		return 0, fmt.Sprintf("%s with %d bits: want 4 or 8", q.QuantMethod, q.Bits)
	case "bitsandbytes":
		if q.LoadIn4Bit {
			return DTypeINT4, ""
		}
		return DTypeINT8, ""
	case "compressed-tensors":
		for _, g := range q.ConfigGroups {
			switch {
			case g.Weights.NumBits == 8 && g.Weights.Type == "float":
				return DTypeFP8, ""
			case g.Weights.NumBits == 8:
				return DTypeINT8, ""
			case g.Weights.NumBits == 4:
				return DTypeINT4, ""
			}
		}
		return 0, "compressed-tensors without 8-bit or 4-bit weights in config_groups"
	}
	return 0, fmt.Sprintf("quant_method %q: want fp8, compressed-tensors, awq, gptq or bitsandbytes", q.QuantMethod)
}
