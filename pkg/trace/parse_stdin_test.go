package trace

import (
	"strings"
	"testing"
)

// TestParseStdin: "-", standard input to many commands, is refused saying
// so: a trace is read once per policy, as a pipe cannot be. It said "-: no
// such file, nor a trace spec".
func TestParseStdin(t *testing.T) {
	for _, spec := range []string{"-", "csv:-", "azure:-"} {
		_, err := Parse(spec, Options{Seed: 1})
		if err == nil || !strings.Contains(err.Error(), `"-" is standard input, which is not read: a trace is read more than once`) || !strings.Contains(err.Error(), "save it to a file first") {
			t.Errorf("%s: %v, want standard input refused, saying to save it to a file", spec, err)
		}
	}
}
