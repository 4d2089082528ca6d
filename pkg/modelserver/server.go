package modelserver

import (
	"fmt"
	"slices"
	"strings"
)

// Server is a model server (vLLM, SGLang, ...). The zero value Unknown means "not known
// yet": readers auto-detect it from a page.
type Server int

// The known servers, in auto-detection order (Servers()).
const (
	// Unknown means auto-detect.
	Unknown Server = iota
	// VLLM is vLLM (also llm-d-inference-sim, which mimics its names).
	VLLM
	// SGLang is SGLang (`--enable-metrics`), including gateway re-exports.
	SGLang
	// LlamaCpp is the llama.cpp server (`--metrics`).
	LlamaCpp
	// TGI is Hugging Face text-generation-inference (and the vLLM TGIS adapter).
	TGI
	// TRTLLM is trtllm-serve (TensorRT-LLM, `trtllm_` names; `pytrtllm:` in 2025).
	TRTLLM
	// Triton is NVIDIA Triton Inference Server.
	Triton
	// EPP is the llm-d Endpoint Picker: one page per InferencePool, not per
	// replica (epp.go).
	EPP
)

var serverNames = map[Server]string{
	Unknown:  "auto",
	VLLM:     "vllm",
	SGLang:   "sglang",
	LlamaCpp: "llamacpp",
	TGI:      "tgi",
	TRTLLM:   "trtllm",
	Triton:   "triton",
	EPP:      "epp",
}

// aliases are extra spellings ParseServer accepts.
var aliases = map[string]Server{
	"":             Unknown,
	"unknown":      Unknown,
	"llama.cpp":    LlamaCpp,
	"llama-cpp":    LlamaCpp,
	"tensorrt-llm": TRTLLM,
	"trt-llm":      TRTLLM,
	"pytrtllm":     TRTLLM,
	"llm-d":        EPP,
	"llmd":         EPP,
}

// Servers returns the known servers (not Unknown) in auto-detection order.
func Servers() []Server {
	return []Server{VLLM, SGLang, LlamaCpp, TGI, TRTLLM, Triton, EPP}
}

// Names returns the canonical names of the known servers, for help texts.
func Names() []string {
	var out []string
	for _, s := range Servers() {
		out = append(out, s.String())
	}
	return out
}

// String returns the canonical lower-case name ("vllm", "llamacpp", …);
// Unknown is "auto".
func (s Server) String() string {
	if n, ok := serverNames[s]; ok {
		return n
	}
	return fmt.Sprintf("Server(%d)", int(s))
}

// ParseServer maps a name (case-insensitive; "auto" or "" is Unknown) to a
// Server. The error lists the allowed names.
func ParseServer(name string) (Server, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	for s, sn := range serverNames {
		if n == sn {
			return s, nil
		}
	}
	if s, ok := aliases[n]; ok {
		return s, nil
	}
	return Unknown, fmt.Errorf("unknown server %q (allowed: auto, %s)", name, strings.Join(Names(), ", "))
}

// MarshalText implements encoding.TextMarshaler (JSON, flags).
func (s Server) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText implements encoding.TextUnmarshaler with ParseServer.
func (s *Server) UnmarshalText(b []byte) error {
	v, err := ParseServer(string(b))
	if err != nil {
		return err
	}
	*s = v
	return nil
}

// vllmTTFTBuckets are vLLM's vllm:time_to_first_token_seconds bucket
// bounds in seconds (vllm/v1/metrics/loggers.py, as pkg/fleet and
// pkg/replay export them).
var vllmTTFTBuckets = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0}

// TTFTBuckets are the finite bucket bounds, in seconds, of s's TTFT
// histogram when they are known (vLLM's), else nil.
func (s Server) TTFTBuckets() []float64 {
	if s == VLLM {
		return slices.Clone(vllmTTFTBuckets)
	}
	return nil
}

// vllmLatencyBuckets are vLLM's request_latency_buckets in seconds
// (vllm/v1/metrics/loggers.py): the bounds of vllm:request_queue_time_seconds
// and of its e2e, inference, prefill and decode time histograms. The
// lowest is 0.3 s: waits all under it read 0.285 s as a p95.
var vllmLatencyBuckets = []float64{0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0}

// QueueTimeBuckets are the finite bucket bounds, in seconds, of s's
// queue-time histogram when they are known (vLLM's request latency
// buckets), else nil.
func (s Server) QueueTimeBuckets() []float64 {
	if s == VLLM {
		return slices.Clone(vllmLatencyBuckets)
	}
	return nil
}
