package replica

import (
	"fmt"
	"strings"
)

// DType is a number format for weights or KV cache. The zero value is
// DTypeAuto, which for the KV cache means "the activation dtype" as vLLM's
// --kv-cache-dtype auto does.
type DType int

// The supported number formats.
const (
	DTypeAuto DType = iota // KV cache only: the model's activation dtype (bf16/fp16)
	DTypeFP16              // IEEE half, 2 bytes
	DTypeBF16              // bfloat16, 2 bytes
	DTypeFP8               // FP8 (E4M3/E5M2), 1 byte; W8A8 on GPUs with FP8 tensor cores
	DTypeINT8              // 8-bit integer (weight-only or W8A8), 1 byte
	DTypeINT4              // 4-bit integer (AWQ/GPTQ weight-only), 0.5 byte
)

var dtypeNames = []string{"auto", "fp16", "bf16", "fp8", "int8", "int4"}

// dtypeAliases maps the spellings vLLM and Hugging Face use to a DType.
var dtypeAliases = map[string]DType{
	"auto": DTypeAuto, "fp16": DTypeFP16, "float16": DTypeFP16, "half": DTypeFP16,
	"bf16": DTypeBF16, "bfloat16": DTypeBF16,
	"fp8": DTypeFP8, "fp8_e4m3": DTypeFP8, "fp8_e5m2": DTypeFP8,
	"int8": DTypeINT8, "int4": DTypeINT4,
}

// String returns the canonical lower-case name ("fp16", "bf16", ...).
func (d DType) String() string {
	if d < 0 || int(d) >= len(dtypeNames) {
		return fmt.Sprintf("DType(%d)", int(d))
	}
	return dtypeNames[d]
}

// Bytes is the storage size of one element in bytes (0.5 for int4); 0 for
// DTypeAuto, which must be resolved first.
func (d DType) Bytes() float64 {
	switch d {
	case DTypeFP16, DTypeBF16:
		return 2
	case DTypeFP8, DTypeINT8:
		return 1
	case DTypeINT4:
		return 0.5
	}
	return 0
}

// MarshalText implements encoding.TextMarshaler (JSON output).
func (d DType) MarshalText() ([]byte, error) { return []byte(d.String()), nil }

// ParseDType parses a dtype name, accepting vLLM/Hugging Face spellings
// (float16, half, bfloat16, fp8_e4m3, ...). The error lists the allowed names.
func ParseDType(s string) (DType, error) {
	if d, ok := dtypeAliases[strings.ToLower(strings.TrimSpace(s))]; ok {
		return d, nil
	}
	return 0, fmt.Errorf("unknown dtype %q (allowed: %s)", s, strings.Join(dtypeNames, ", "))
}
