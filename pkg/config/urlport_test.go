package config

import (
	"strings"
	"testing"
)

// TestURLPortRange: a URL whose port is not 1..65535 (net/url accepts any
// digits) is refused at its FILE:LINE:COL, for each key taking a URL.
// Columns counted by hand: "  url: " is 7 characters, so the value is at 8;
// "  scrape: [" 11, at 12; "  zero: {held_scrape: " 22, at 23.
func TestURLPortRange(t *testing.T) {
	for _, tc := range []struct{ cfg, want string }{
		{"prometheus:\n  url: http://127.0.0.1:99999\ntargets:\n- name: chat\n  selector: '{pod=\"x\"}'\n  metrics: [{type: queue, target: 8}]\n  max: 4\n",
			`p.yaml:2:8: prometheus.url: "http://127.0.0.1:99999": port 99999: want 1 to 65535`},
		{"targets:\n- name: chat\n  scrape: [http://127.0.0.1:0/metrics]\n  metrics: [{type: queue, target: 8}]\n  max: 4\n",
			`p.yaml:3:12: targets[0].scrape[0]: "http://127.0.0.1:0/metrics": port 0: want 1 to 65535`},
		{"targets:\n- name: chat\n  scrape: [http://127.0.0.1:8001/metrics]\n  metrics: [{type: queue, target: 8}]\n  min: 0\n  max: 4\n  zero: {held_scrape: 'http://127.0.0.1:65536/metrics'}\n",
			`p.yaml:7:23: targets[0].zero.held_scrape: "http://127.0.0.1:65536/metrics": port 65536: want 1 to 65535`},
	} {
		_, err := Parse([]byte(tc.cfg), "p.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.cfg, err, tc.want)
		}
	}
	// The ends of the range are ports.
	if _, err := Parse([]byte("targets:\n- name: chat\n  scrape: [http://127.0.0.1:1/metrics, http://127.0.0.1:65535/metrics]\n  metrics: [{type: queue, target: 8}]\n  max: 4\n"), "ok.yaml"); err != nil {
		t.Errorf("ports 1 and 65535 refused: %v", err)
	}
}
