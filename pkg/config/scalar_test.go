package config

import (
	"strings"
	"testing"
)

// TestScalarsAsWritten: a name is the text as written, whatever YAML
// would make of it unquoted (007 stays "007", not the number 7: a KEDA
// query for target="007" found nothing); a count is decimal digits (017
// is octal 15 to goccy's YAML 1.1, 17 to YAML 1.2: refused, as are 0x,
// 0o, 0b and _); an out-of-range count names its type's range; tags are
// refused; a quoted key is its text ('max' is max, as YAML says).
func TestScalarsAsWritten(t *testing.T) {
	doc := func(name, extra string) string {
		return "targets:\n- name: " + name + "\n  scrape: [http://127.0.0.1:1/metrics]\n  metrics: [{type: queue, target: 4}]\n" + extra
	}
	for _, name := range []string{"007", "0x1F", "1_0", "12.50", "1.0e3", "False", ".NaN", "0o7", "-5"} {
		cfg, err := Parse([]byte(doc(name, "  max: 3\n")), "n.yaml")
		if err != nil {
			t.Errorf("name %s: %v", name, err)
			continue
		}
		if got := cfg.Targets[0].Name; got != name {
			t.Errorf("name %s read as %q", name, got)
		}
	}
	for _, c := range []struct{ extra, want string }{
		{"  max: 017\n", "n.yaml:5:8: targets[0].max: 017: write an integer in decimal digits (0x, 0o, 0b, _ and a leading 0 are not read)"},
		{"  max: 0x10\n", "targets[0].max: 0x10: write an integer in decimal digits"},
		{"  max: 0o17\n", "targets[0].max: 0o17: write an integer in decimal digits"},
		{"  max: 0b11\n", "targets[0].max: 0b11: write an integer in decimal digits"},
		{"  max: 1_000\n", "targets[0].max: 1_000: write an integer in decimal digits"},
		{"  max: 3\n  behavior: {scaleDown: {stabilizationWindowSeconds: 4294967296}}\n",
			"targets[0].behavior.scaleDown.stabilizationWindowSeconds: 4294967296 is out of range for an integer -2147483648..2147483647"},
		{"  max: !!str 5\n", "n.yaml:5:8: targets[0].max: YAML tags (!!str) are not read: write the value plainly"},
		{"  max: !!int \"5\"\n", "YAML tags (!!int) are not read"},
		{"  max: 3\n  guard: {off: !!str true}\n", "YAML tags (!!str) are not read"},
	} {
		_, err := Parse([]byte(doc("chat", c.extra)), "n.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.extra, err, c.want)
		}
	}
	for _, c := range []struct {
		extra string
		max   int
	}{{"  max: +5\n", 5}, {"  max: 0\n", 0}, {"  'max': 3\n", 3}, {"  \"max\": 4\n", 4}} {
		cfg, err := Parse([]byte(doc("chat", c.extra)), "n.yaml")
		if c.max == 0 { // max 0 is refused by the validator, not the decoder
			if err == nil || strings.Contains(err.Error(), "decimal") {
				t.Errorf("%q: %v, want the validator's refusal of max 0", c.extra, err)
			}
			continue
		}
		if err != nil || *cfg.Targets[0].Max != c.max {
			t.Errorf("%q: %v, want max %d", c.extra, err, c.max)
		}
	}
	cfg, err := Parse([]byte("targets:\n- 'name': chat\n  \"scrape\": [http://127.0.0.1:1/metrics]\n  metrics: [{'type': queue, target: 4}]\n  max: 3\n"), "q.yaml")
	if err != nil || cfg.Targets[0].Name != "chat" {
		t.Errorf("quoted keys: %v", err)
	}
}

// TestMergeKeyRefused: a YAML merge key (<<: *name, a target repeated
// from an anchor) is refused as aliases are, saying so (it was "<<:
// unknown key; allowed here: apply, behavior, ...", as if misspelt).
func TestMergeKeyRefused(t *testing.T) {
	doc := "targets:\n- &t\n  name: chat\n  scrape: [http://127.0.0.1:1/metrics]\n  metrics: [{type: queue, target: 4}]\n  max: 3\n- <<: *t\n  name: chat2\n"
	_, err := Parse([]byte(doc), "m.yaml")
	want := "m.yaml:7:3: targets[1].<<: YAML merge keys (<<: *name) are not read, as aliases are not: repeat the keys"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %q", err, want)
	}
}
