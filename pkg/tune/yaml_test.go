package tune

import "testing"

// TestYAMLScalar: plain names bare; what YAML would read as another type, a
// leading dash, flow punctuation, a quote and a newline quoted (the YAML
// spec's single-quoted and double-quoted scalars).
func TestYAMLScalar(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"h100-sxm", "h100-sxm"},
		{"meta-llama/Llama-3.1-8B", "meta-llama/Llama-3.1-8B"},
		{"/etc/infscale/cal.json", "/etc/infscale/cal.json"},
		{"", "''"},
		{"true", "'true'"},
		{"null", "'null'"},
		{"123", "'123'"},
		{"-x", "'-x'"},
		{"a, b", "'a, b'"},
		{"http://p:9090", "'http://p:9090'"},
		{"o'brien", "'o''brien'"},
		{"a\nb", `"a\nb"`},
	} {
		if got := YAMLScalar(c.in); got != c.want {
			t.Errorf("YAMLScalar(%q) = %s, want %s", c.in, got, c.want)
		}
	}
}
