package modelserver

import (
	"slices"
	"strings"
	"testing"
)

func TestParseServer(t *testing.T) {
	for in, want := range map[string]Server{
		"": Unknown, "auto": Unknown, "vllm": VLLM, "VLLM": VLLM, "llamacpp": LlamaCpp, "llama.cpp": LlamaCpp,
		"sglang": SGLang, "tgi": TGI, "trtllm": TRTLLM, "tensorrt-llm": TRTLLM, "triton": Triton,
	} {
		got, err := ParseServer(in)
		if err != nil || got != want {
			t.Errorf("ParseServer(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	_, err := ParseServer("ollama")
	if err == nil || !strings.Contains(err.Error(), "vllm, sglang, llamacpp, tgi, trtllm, triton") {
		t.Errorf("ParseServer(ollama) err = %v, want the allowed names", err)
	}
	for _, s := range append(Servers(), Unknown) {
		var back Server
		text, _ := s.MarshalText()
		if err := back.UnmarshalText(text); err != nil || back != s {
			t.Errorf("%v round-trips to %v, %v", s, back, err)
		}
	}
}

func TestFamilies(t *testing.T) {
	owner := map[string]Server{}
	for _, s := range Servers() {
		f := s.Families()
		if len(f.Queue()) == 0 || len(f.Prefixes) == 0 {
			t.Errorf("%v: no queue families or prefixes", s)
		}
		for _, n := range f.All() {
			if prev, dup := owner[n]; dup {
				t.Errorf("%s listed by %v and %v", n, prev, s)
			}
			owner[n] = s
			if !slices.ContainsFunc(f.Prefixes, func(p string) bool { return strings.HasPrefix(n, p) }) {
				t.Errorf("%v: %s outside the server's prefixes %v", s, n, f.Prefixes)
			}
		}
	}
	// vLLM KV preference (docs/design.md case C08): new name first, old name second.
	if got := VLLM.Families().KV; !slices.Equal(got, []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"}) {
		t.Errorf("vLLM KV = %v", got)
	}
	if len(Unknown.Families().All()) != 0 {
		t.Error("Unknown has families")
	}
}

// TestSeriesParses reads every family alternative of every server with
// Series: plain names stay whole, selectors split into a name and matchers.
func TestSeriesParses(t *testing.T) {
	for _, s := range Servers() {
		for _, alt := range s.Families().All() {
			name, ms := Series(alt) // panics on a selector that does not parse
			if name == "" || strings.ContainsAny(name, "{}\"") {
				t.Errorf("%s: %q gives name %q", s, alt, name)
			}
			if strings.ContainsRune(alt, '{') != (len(ms) > 0) {
				t.Errorf("%s: %q gives matchers %v", s, alt, ms)
			}
		}
	}
	name, ms := Series(`nv_trt_llm_request_metrics{request_type="active"}`)
	if name != "nv_trt_llm_request_metrics" || len(ms) != 1 || ms[0].String() != `request_type="active"` {
		t.Errorf("Series = %q, %v; want nv_trt_llm_request_metrics, [request_type=\"active\"]", name, ms)
	}
}

// TestHistogramsArePlainNames: histogram families are read by their
// samples' suffixed names (<name>_bucket, _sum, _count), which a selector
// alternative has none of; only gauges and counters may be selectors.
func TestHistogramsArePlainNames(t *testing.T) {
	for _, s := range Servers() {
		f := s.Families()
		for _, alt := range concat(f.TTFT, f.QueueTime, f.ITL) {
			if _, ms := Series(alt); ms != nil {
				t.Errorf("%s: histogram family %q is a selector", s, alt)
			}
		}
	}
}
