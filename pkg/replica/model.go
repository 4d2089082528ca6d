package replica

import (
	"fmt"
	"slices"
	"strings"
)

// Model is a decoder-only transformer's shape, as its Hugging Face
// config.json gives it. Parameter counts are derived from the shape (Params,
// ActiveParams), not typed in, and are tested against the model cards.
type Model struct {
	// Name is the catalog key, e.g. "llama-3.1-8b".
	Name string `json:"name"`
	// HFRepo is the Hugging Face repository whose config.json is the source.
	HFRepo string `json:"hf_repo"`
	// Layers is num_hidden_layers.
	Layers int `json:"layers"`
	// Hidden is hidden_size.
	Hidden int `json:"hidden_size"`
	// Intermediate is intermediate_size (per expert for MoE models).
	Intermediate int `json:"intermediate_size"`
	// Heads is num_attention_heads.
	Heads int `json:"attention_heads"`
	// KVHeads is num_key_value_heads (grouped-query attention).
	KVHeads int `json:"kv_heads"`
	// HeadDim is head_dim (hidden_size / num_attention_heads when absent).
	HeadDim int `json:"head_dim"`
	// Vocab is vocab_size.
	Vocab int `json:"vocab_size"`
	// TiedEmbeddings is tie_word_embeddings (no separate lm_head matrix).
	TiedEmbeddings bool `json:"tied_embeddings,omitempty"`
	// QKVBias: the q, k and v projections carry biases (Qwen2).
	QKVBias bool `json:"qkv_bias,omitempty"`
	// QKNorm: per-head RMSNorm on q and k (Qwen3).
	QKNorm bool `json:"qk_norm,omitempty"`
	// Experts is num_local_experts for a mixture of experts; 0 for dense.
	Experts int `json:"experts,omitempty"`
	// ExpertsPerToken is num_experts_per_tok (top-k routing).
	ExpertsPerToken int `json:"experts_per_token,omitempty"`
	// SharedExpertIntermediate is the intermediate size of the experts
	// every token passes through in a MoE layer, summed (Llama 4: one of
	// intermediate_size; Qwen2-MoE: shared_expert_intermediate_size;
	// DeepSeek: n_shared_experts × moe_intermediate_size); 0 for none.
	SharedExpertIntermediate int `json:"shared_expert_intermediate_size,omitempty"`
	// MoELayerStep makes every MoELayerStep-th layer a MoE layer and the
	// others dense (Llama 4's interleave_moe_layer_step); 0 or 1: every
	// layer is MoE.
	MoELayerStep int `json:"moe_layer_step,omitempty"`
	// DenseIntermediate is the MLP size of a MoE model's dense layers
	// (Llama 4's intermediate_size_mlp); 0 means Intermediate.
	DenseIntermediate int `json:"dense_intermediate_size,omitempty"`
	// SlidingWindow is the attention window in tokens of the layers that
	// use one (sliding_window, Llama 4's attention_chunk_size), and
	// SlidingLayers how many layers do; 0 for full attention everywhere.
	// A layer with a window keeps and reads at most SlidingWindow tokens
	// of KV per sequence.
	SlidingWindow int `json:"sliding_window,omitempty"`
	SlidingLayers int `json:"sliding_layers,omitempty"`
	// NominalParams is the size in the model's name or announcement ("8B" =
	// 8e9; Mixtral's announced 46.7B). docs/design.md's reference arithmetic uses it.
	NominalParams float64 `json:"nominal_params"`
	// DType is torch_dtype in config.json: the released weights' format.
	DType DType `json:"dtype"`
}

// Digest is the model's figures as a hex SHA-256 (of their JSON): a
// model_config (a Hugging Face config.json) edited in place, so that
// another model sits at the same path, has another digest.
func (m Model) Digest() string { return digestJSON(m) }

// attentionParams is one layer's attention projections plus its norms.
func (m Model) attentionParams() float64 {
	h, q, kv := float64(m.Hidden), float64(m.Heads*m.HeadDim), float64(m.KVHeads*m.HeadDim)
	p := h*q + 2*h*kv + q*h // q, k, v, o projections
	if m.QKVBias {
		p += q + 2*kv
	}
	if m.QKNorm {
		p += 2 * float64(m.HeadDim)
	}
	return p + 2*h // input and post-attention RMSNorm
}

// mlpParams is one SwiGLU MLP (gate, up, down) of the expert size
// (Intermediate).
func (m Model) mlpParams() float64 { return 3 * float64(m.Hidden) * float64(m.Intermediate) }

// moeLayers is the number of MoE layers: every MoELayerStep-th (layer
// index i with (i+1) % step == 0, as Llama 4 counts), all of them by default.
func (m Model) moeLayers() int {
	if m.Experts <= 1 {
		return 0
	}
	return m.Layers / max(m.MoELayerStep, 1)
}

// denseMLPParams is one dense layer's MLP.
func (m Model) denseMLPParams() float64 {
	return 3 * float64(m.Hidden) * float64(m.denseIntermediate())
}

// denseIntermediate is a dense layer's MLP size: a MoE model's
// DenseIntermediate when it has one, else Intermediate.
func (m Model) denseIntermediate() int {
	if m.Experts > 1 && m.DenseIntermediate > 0 {
		return m.DenseIntermediate
	}
	return m.Intermediate
}

// embeddingParams counts the token embedding, the lm_head unless tied, and
// the final norm.
func (m Model) embeddingParams() float64 {
	e := float64(m.Vocab) * float64(m.Hidden)
	if !m.TiedEmbeddings {
		e *= 2
	}
	return e + float64(m.Hidden)
}

// ExpertParams is the parameter count in expert MLPs (0 for dense models):
// the part of the weights a decode step reads only for experts it routes to.
func (m Model) ExpertParams() float64 {
	return float64(m.moeLayers()) * float64(m.Experts) * m.mlpParams()
}

// Params is the total parameter count derived from the shape.
func (m Model) Params() float64 {
	moe := m.moeLayers()
	p := float64(m.Layers)*m.attentionParams() + float64(m.Layers-moe)*m.denseMLPParams()
	// MoE layers: the router and the shared experts; the routed experts
	// are ExpertParams.
	p += float64(moe) * (float64(m.Hidden)*float64(m.Experts) + 3*float64(m.Hidden)*float64(m.SharedExpertIntermediate))
	return p + m.ExpertParams() + m.embeddingParams()
}

// ActiveParams is the parameter count one token passes through: all of a
// dense model; for a mixture of experts, everything but the experts plus
// ExpertsPerToken experts per layer.
func (m Model) ActiveParams() float64 {
	if m.Experts <= 1 {
		return m.Params()
	}
	return m.Params() - m.ExpertParams() + float64(m.moeLayers())*float64(m.ExpertsPerToken)*m.mlpParams()
}

// KVBytesPerToken is the KV cache one token occupies across the whole
// model: K and V × layers × KV heads × head dim × bytes per element.
func (m Model) KVBytesPerToken(kv DType) float64 {
	return 2 * float64(m.Layers) * float64(m.KVHeads) * float64(m.HeadDim) * kv.Bytes()
}

// models is the model catalog. Every shape is copied from the config.json of
// HFRepo (num_hidden_layers, hidden_size, intermediate_size,
// num_attention_heads, num_key_value_heads, head_dim, vocab_size,
// tie_word_embeddings, num_local_experts, num_experts_per_tok, torch_dtype).
// Nominal sizes are the names' (Mixtral: "46.7B total parameters but only
// uses 12.9B per token", mistral.ai/news/mixtral-of-experts).
var models = []Model{
	{Name: "llama-3-8b", HFRepo: "meta-llama/Meta-Llama-3-8B", Layers: 32, Hidden: 4096, Intermediate: 14336, Heads: 32, KVHeads: 8, HeadDim: 128, Vocab: 128256, NominalParams: 8e9, DType: DTypeBF16},
	{Name: "llama-3.1-8b", HFRepo: "meta-llama/Llama-3.1-8B-Instruct", Layers: 32, Hidden: 4096, Intermediate: 14336, Heads: 32, KVHeads: 8, HeadDim: 128, Vocab: 128256, NominalParams: 8e9, DType: DTypeBF16},
	{Name: "llama-3.1-70b", HFRepo: "meta-llama/Llama-3.1-70B-Instruct", Layers: 80, Hidden: 8192, Intermediate: 28672, Heads: 64, KVHeads: 8, HeadDim: 128, Vocab: 128256, NominalParams: 70e9, DType: DTypeBF16},
	{Name: "llama-2-7b", HFRepo: "meta-llama/Llama-2-7b-hf", Layers: 32, Hidden: 4096, Intermediate: 11008, Heads: 32, KVHeads: 32, HeadDim: 128, Vocab: 32000, NominalParams: 7e9, DType: DTypeFP16},
	{Name: "qwen2.5-7b", HFRepo: "Qwen/Qwen2.5-7B-Instruct", Layers: 28, Hidden: 3584, Intermediate: 18944, Heads: 28, KVHeads: 4, HeadDim: 128, Vocab: 152064, QKVBias: true, NominalParams: 7e9, DType: DTypeBF16},
	{Name: "qwen2.5-72b", HFRepo: "Qwen/Qwen2.5-72B-Instruct", Layers: 80, Hidden: 8192, Intermediate: 29568, Heads: 64, KVHeads: 8, HeadDim: 128, Vocab: 152064, QKVBias: true, NominalParams: 72e9, DType: DTypeBF16},
	{Name: "qwen3-8b", HFRepo: "Qwen/Qwen3-8B", Layers: 36, Hidden: 4096, Intermediate: 12288, Heads: 32, KVHeads: 8, HeadDim: 128, Vocab: 151936, QKNorm: true, NominalParams: 8e9, DType: DTypeBF16},
	{Name: "mistral-7b", HFRepo: "mistralai/Mistral-7B-v0.1", Layers: 32, Hidden: 4096, Intermediate: 14336, Heads: 32, KVHeads: 8, HeadDim: 128, Vocab: 32000, NominalParams: 7e9, DType: DTypeBF16},
	{Name: "mistral-nemo-12b", HFRepo: "mistralai/Mistral-Nemo-Instruct-2407", Layers: 40, Hidden: 5120, Intermediate: 14336, Heads: 32, KVHeads: 8, HeadDim: 128, Vocab: 131072, NominalParams: 12e9, DType: DTypeBF16},
	{Name: "yi-34b", HFRepo: "01-ai/Yi-34B", Layers: 60, Hidden: 7168, Intermediate: 20480, Heads: 56, KVHeads: 8, HeadDim: 128, Vocab: 64000, NominalParams: 34e9, DType: DTypeBF16},
	{Name: "llama-4-scout-17b-16e", HFRepo: "meta-llama/Llama-4-Scout-17B-16E-Instruct", Layers: 48, Hidden: 5120, Intermediate: 8192, DenseIntermediate: 16384, Heads: 40, KVHeads: 8, HeadDim: 128, Vocab: 202048, Experts: 16, ExpertsPerToken: 1, SharedExpertIntermediate: 8192, MoELayerStep: 1, SlidingWindow: 8192, SlidingLayers: 36, NominalParams: 109e9, DType: DTypeBF16},
	{Name: "llama-4-scout-17b-16e-fp8", HFRepo: "RedHatAI/Llama-4-Scout-17B-16E-Instruct-FP8-dynamic", Layers: 48, Hidden: 5120, Intermediate: 8192, DenseIntermediate: 16384, Heads: 40, KVHeads: 8, HeadDim: 128, Vocab: 202048, Experts: 16, ExpertsPerToken: 1, SharedExpertIntermediate: 8192, MoELayerStep: 1, SlidingWindow: 8192, SlidingLayers: 36, NominalParams: 109e9, DType: DTypeFP8},
	{Name: "mixtral-8x7b", HFRepo: "mistralai/Mixtral-8x7B-v0.1", Layers: 32, Hidden: 4096, Intermediate: 14336, Heads: 32, KVHeads: 8, HeadDim: 128, Vocab: 32000, Experts: 8, ExpertsPerToken: 2, NominalParams: 46.7e9, DType: DTypeBF16},
}

// modelAliases maps common spellings (Hugging Face repository names) to
// catalog names.
var modelAliases = map[string]string{
	"meta-llama-3-8b": "llama-3-8b", "llama3-8b": "llama-3-8b",
	"llama-3.1-8b-instruct": "llama-3.1-8b", "llama-3.1-70b-instruct": "llama-3.1-70b",
	"llama-2-7b-hf": "llama-2-7b", "qwen2.5-7b-instruct": "qwen2.5-7b",
	"qwen2.5-72b-instruct": "qwen2.5-72b", "mistral-7b-v0.1": "mistral-7b",
	"mistral-7b-instruct": "mistral-7b", "mixtral-8x7b-v0.1": "mixtral-8x7b",
	"mistral-nemo-instruct-2407": "mistral-nemo-12b", "mistral-nemo-base-2407": "mistral-nemo-12b",
	"llama-4-scout-17b-16e-instruct":             "llama-4-scout-17b-16e",
	"llama-4-scout-17b-16e-instruct-fp8-dynamic": "llama-4-scout-17b-16e-fp8",
}

// Models returns a copy of the model catalog in catalog order.
func Models() []Model { return slices.Clone(models) }

// ModelNames lists the catalog keys, for help and error messages.
func ModelNames() []string {
	names := make([]string, len(models))
	for i, m := range models {
		names[i] = m.Name
	}
	return names
}

// LookupModel finds a model by catalog key, alias or Hugging Face repository
// ("meta-llama/Llama-3.1-8B-Instruct"), case-insensitively. The error lists
// the allowed names.
func LookupModel(name string) (Model, error) {
	key := strings.ToLower(strings.TrimSpace(name))
	for _, m := range models {
		if strings.ToLower(m.HFRepo) == key {
			return m, nil
		}
	}
	if i := strings.LastIndexByte(key, '/'); i >= 0 {
		key = key[i+1:]
	}
	if a, ok := modelAliases[key]; ok {
		key = a
	}
	for _, m := range models {
		if m.Name == key {
			return m, nil
		}
	}
	return Model{}, fmt.Errorf("unknown model %q (allowed: %s)", name, strings.Join(ModelNames(), ", "))
}
