package config

import (
	"strings"
	"testing"
)

// TestAddresses: listen needs a port 0..65535 (":" and 99999 passed
// --check-config and failed at startup); prometheus.url is the base URL.
func TestAddresses(t *testing.T) {
	for _, c := range []struct{ prom, listen, want string }{
		{"", "0.0.0.0:9105", ""},
		{"", "[::1]:9105", ""},
		{"", ":", `listen: port "": allowed a port number 0..65535`},
		{"", "127.0.0.1:0", ""}, // any free port: the demo and tests
		{"", "127.0.0.1:65536", `listen: port "65536"`},
		{"", "localhost:http", `listen: port "http"`},
		{"http://prometheus:9090/prefix", "", ""}, // behind a path prefix: fine
		{"http://prometheus:9090/prefix/api/v1/", "", "prometheus.url: \"http://prometheus:9090/prefix/api/v1/\": the base URL without /api/v1"},
		{"http://prometheus:9090#x", "", "no query, fragment or user:password"},
	} {
		y := "targets: [{name: a, scrape: ['http://127.0.0.1:1/metrics'], selector: '{a=\"b\"}', metrics: [{type: queue, target: 1}], max: 2}]\n"
		if c.listen != "" {
			y = "listen: '" + c.listen + "'\n" + y
		}
		if c.prom != "" { // Prometheus mode: the selector, no scrape: list
			y = "prometheus: {url: '" + c.prom + "'}\n" + strings.Replace(y, "scrape: ['http://127.0.0.1:1/metrics'], ", "", 1)
		}
		_, err := Parse([]byte(y), "a.yaml")
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%q %q: %v", c.prom, c.listen, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("%q %q: got %v, want %q", c.prom, c.listen, err, c.want)
		}
	}
}
