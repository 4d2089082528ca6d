package replica

import (
	"fmt"
	"slices"
	"strings"
)

// GPU is one accelerator's datasheet figures. All rates are dense (without
// 2:4 sparsity): NVIDIA datasheets print the sparse figure with an asterisk,
// and the dense figure is half of it.
type GPU struct {
	// Name is the catalog key, e.g. "h100-sxm".
	Name string `json:"name"`
	// Description is the marketing name, e.g. "NVIDIA H100 SXM5 80GB".
	Description string `json:"description"`
	// MemoryBytes is the nominal memory in decimal bytes as marketed
	// ("80GB" = 80e9). docs/design.md's reference arithmetic uses this.
	MemoryBytes float64 `json:"memory_bytes"`
	// DeviceMemoryBytes is the total the CUDA/ROCm runtime reports
	// (torch.cuda.mem_get_info), which vLLM multiplies by
	// --gpu-memory-utilization. 0 means unmeasured: DeviceMemory then
	// estimates it as the nominal figure read as GiB less 1% (ECC, driver).
	DeviceMemoryBytes float64 `json:"device_memory_bytes,omitempty"`
	// BandwidthBytesPerSecond is the peak memory (HBM/GDDR) bandwidth.
	BandwidthBytesPerSecond float64 `json:"bandwidth_bytes_per_second"`
	// BF16FLOPS is dense BF16/FP16 tensor-core throughput in FLOP/s.
	BF16FLOPS float64 `json:"bf16_flops"`
	// FP8FLOPS is dense FP8 tensor-core throughput in FLOP/s; 0 when the GPU
	// has no FP8 tensor cores (Ampere): FP8 weights then run at BF16 rate.
	FP8FLOPS float64 `json:"fp8_flops,omitempty"`
	// Link names the GPU-to-GPU interconnect a tensor-parallel all-reduce
	// runs over ("nvlink", "pcie", "infinity-fabric") and
	// LinkBandwidthBytesPerSecond its bandwidth per direction per GPU.
	Link                        string  `json:"link,omitempty"`
	LinkBandwidthBytesPerSecond float64 `json:"link_bandwidth_bytes_per_second,omitempty"`
}

// DeviceMemory returns the runtime-reported total memory in bytes: the
// measured figure when the catalog has one, else MemoryBytes/1e9 GiB × 0.99.
// The 0.99 comes from the H100 80GB, where 80 GiB × 0.99 = 79.2 GiB against a
// measured 79.22 GiB.
func (g GPU) DeviceMemory() float64 {
	if g.DeviceMemoryBytes > 0 {
		return g.DeviceMemoryBytes
	}
	return g.MemoryBytes / 1e9 * gib * 0.99
}

// FLOPS returns the dense tensor throughput used for a given weight dtype:
// FP8 rate for FP8 weights on GPUs that have FP8 tensor cores, BF16 rate
// otherwise (weight-only int8/int4 kernels dequantise to 16-bit and compute
// there).
func (g GPU) FLOPS(weights DType) float64 {
	if weights == DTypeFP8 && g.FP8FLOPS > 0 {
		return g.FP8FLOPS
	}
	return g.BF16FLOPS
}

const (
	gb  = 1e9
	gib = 1 << 30
	tb  = 1e12
	tf  = 1e12
)

// gpus is the GPU catalog. Sources (NVIDIA/AMD datasheets; dense = sparse/2):
//
//   - A10G: AWS G5 instances; 24 GB GDDR6, 600 GB/s. AWS publishes no tensor
//     rate for this variant; Baseten's "NVIDIA A10 vs A10G for ML model
//     inference" spec comparison gives 70 TFLOPS BF16 tensor for the A10G
//     (the A10 has 125). No FP8.
//   - L4: NVIDIA L4 datasheet: 24 GB GDDR6, 300 GB/s, BF16 242 TFLOPS sparse
//     (121 dense), FP8 485 sparse (242.5 dense).
//   - L40S: NVIDIA L40S datasheet: 48 GB GDDR6, 864 GB/s, BF16 362.05
//     TFLOPS dense (733 sparse), FP8 1,466 sparse (733 dense).
//   - A100 40GB / 80GB (SXM): NVIDIA A100 datasheet: 40 GB HBM2 at 1,555 GB/s,
//     80 GB HBM2e at 2,039 GB/s; BF16 312 TFLOPS dense. No FP8.
//   - H100 SXM: NVIDIA H100 datasheet: 80 GB HBM3, 3.35 TB/s, BF16 1,979
//     TFLOPS sparse (989.5 dense, rounded to 990 as docs/design.md does), FP8
//     3,958 sparse (1,979 dense). Device memory 79.22 GiB: vLLM's memory
//     profiler log on an H100 (vllm-project/vllm PR #10511, "total_gpu_memory
//     79.22GiB").
//   - H100 PCIe: same datasheet: 80 GB HBM2e, 2.0 TB/s, BF16 1,513 sparse
//     (756.5 dense), FP8 3,026 sparse (1,513 dense).
//   - H200: NVIDIA H200 datasheet: 141 GB HBM3e, 4.8 TB/s, same tensor cores
//     as H100 SXM.
//   - B200: NVIDIA HGX B200 datasheet (per GPU): 180 GB HBM3e, 7.7 TB/s, BF16
//     4.5 PFLOPS sparse (2.25 dense), FP8 9 PFLOPS sparse (4.5 dense).
//   - MI300X: AMD Instinct MI300X datasheet: 192 GB HBM3, 5.3 TB/s, BF16
//     1,307.4 TFLOPS dense, FP8 2,614.9 TFLOPS dense.
//
// Links (per direction per GPU): NVLink 4 (H100/H200 SXM) 900 GB/s
// bidirectional = 450; NVLink 3 (A100 SXM) 600 = 300; NVLink 5 (B200) 1.8
// TB/s = 900; PCIe Gen5 x16 64 GB/s (H100 PCIe without its bridge), Gen4
// x16 32 (A10G, L4, L40S); MI300X Infinity Fabric 7 links × 64 GB/s = 448.
var gpus = []GPU{
	{Name: "a10g", Description: "NVIDIA A10G 24GB (AWS G5)", MemoryBytes: 24 * gb, BandwidthBytesPerSecond: 600 * gb, BF16FLOPS: 70 * tf, Link: "pcie", LinkBandwidthBytesPerSecond: 32 * gb},
	{Name: "l4", Description: "NVIDIA L4 24GB", MemoryBytes: 24 * gb, BandwidthBytesPerSecond: 300 * gb, BF16FLOPS: 121 * tf, FP8FLOPS: 242.5 * tf, Link: "pcie", LinkBandwidthBytesPerSecond: 32 * gb},
	{Name: "l40s", Description: "NVIDIA L40S 48GB", MemoryBytes: 48 * gb, BandwidthBytesPerSecond: 864 * gb, BF16FLOPS: 362.05 * tf, FP8FLOPS: 733 * tf, Link: "pcie", LinkBandwidthBytesPerSecond: 32 * gb},
	{Name: "a100-40gb", Description: "NVIDIA A100 SXM4 40GB", MemoryBytes: 40 * gb, BandwidthBytesPerSecond: 1555 * gb, BF16FLOPS: 312 * tf, Link: "nvlink", LinkBandwidthBytesPerSecond: 300 * gb},
	{Name: "a100-80gb", Description: "NVIDIA A100 SXM4 80GB", MemoryBytes: 80 * gb, BandwidthBytesPerSecond: 2039 * gb, BF16FLOPS: 312 * tf, Link: "nvlink", LinkBandwidthBytesPerSecond: 300 * gb},
	{Name: "h100-sxm", Description: "NVIDIA H100 SXM5 80GB", MemoryBytes: 80 * gb, DeviceMemoryBytes: 79.22 * gib, BandwidthBytesPerSecond: 3.35 * tb, BF16FLOPS: 990 * tf, FP8FLOPS: 1979 * tf, Link: "nvlink", LinkBandwidthBytesPerSecond: 450 * gb},
	{Name: "h100-pcie", Description: "NVIDIA H100 PCIe 80GB", MemoryBytes: 80 * gb, BandwidthBytesPerSecond: 2.0 * tb, BF16FLOPS: 756.5 * tf, FP8FLOPS: 1513 * tf, Link: "pcie", LinkBandwidthBytesPerSecond: 64 * gb},
	{Name: "h200", Description: "NVIDIA H200 SXM 141GB", MemoryBytes: 141 * gb, BandwidthBytesPerSecond: 4.8 * tb, BF16FLOPS: 990 * tf, FP8FLOPS: 1979 * tf, Link: "nvlink", LinkBandwidthBytesPerSecond: 450 * gb},
	{Name: "b200", Description: "NVIDIA B200 180GB (HGX)", MemoryBytes: 180 * gb, BandwidthBytesPerSecond: 7.7 * tb, BF16FLOPS: 2250 * tf, FP8FLOPS: 4500 * tf, Link: "nvlink", LinkBandwidthBytesPerSecond: 900 * gb},
	{Name: "mi300x", Description: "AMD Instinct MI300X 192GB", MemoryBytes: 192 * gb, BandwidthBytesPerSecond: 5.3 * tb, BF16FLOPS: 1307.4 * tf, FP8FLOPS: 2614.9 * tf, Link: "infinity-fabric", LinkBandwidthBytesPerSecond: 448 * gb},
}

// gpuAliases maps common spellings to catalog names.
var gpuAliases = map[string]string{
	"h100": "h100-sxm", "h100-80gb": "h100-sxm", "h100-sxm5": "h100-sxm",
	"a100": "a100-80gb", "a100-80g": "a100-80gb", "a100-40g": "a100-40gb",
	"h200-141gb": "h200",
}

// GPUs returns a copy of the GPU catalog in catalog order.
func GPUs() []GPU { return slices.Clone(gpus) }

// GPUNames lists the catalog keys, for help and error messages.
func GPUNames() []string {
	names := make([]string, len(gpus))
	for i, g := range gpus {
		names[i] = g.Name
	}
	return names
}

// LookupGPU finds a GPU by catalog key or alias, case-insensitively. The
// error lists the allowed names.
func LookupGPU(name string) (GPU, error) {
	key := strings.ToLower(strings.TrimSpace(name))
	if a, ok := gpuAliases[key]; ok {
		key = a
	}
	for _, g := range gpus {
		if g.Name == key {
			return g, nil
		}
	}
	return GPU{}, fmt.Errorf("unknown GPU %q (allowed: %s)", name, strings.Join(GPUNames(), ", "))
}
