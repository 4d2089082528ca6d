package config

import (
	"strings"
	"testing"
)

// TestHeldScrape: in embedded mode zero.held_scrape (an activator's
// /metrics) stands for zero.held; it is refused with prometheus.url, beside
// held, or when not a URL.
func TestHeldScrape(t *testing.T) {
	const embedded = "targets:\n- name: chat\n  scrape: [http://127.0.0.1:8001/metrics]\n  metrics: [{type: queue, target: 8}]\n  min: 0\n  max: 4\n  zero: {held_scrape: %s}\n"
	f, err := Parse([]byte(strings.Replace(embedded, "%s", "http://127.0.0.1:8080/metrics", 1)), "ok.yaml")
	if err != nil {
		t.Fatalf("embedded held_scrape refused: %v", err)
	}
	if got := f.Targets[0].Zero.HeldScrape; got != "http://127.0.0.1:8080/metrics" {
		t.Errorf("held_scrape %q", got)
	}
	for _, tc := range []struct{ cfg, want string }{
		{strings.Replace(embedded, "%s", "ftp://x", 1), "zero.held_scrape: must be an http:// or https:// URL"},
		{"prometheus: {url: http://127.0.0.1:9090}\n" + strings.Replace(strings.Replace(embedded, "%s", "http://a:1/metrics", 1), "  scrape: [http://127.0.0.1:8001/metrics]\n", "", 1),
			"zero.held_scrape: is for embedded mode"},
		{strings.Replace(embedded, "{held_scrape: %s}", "{held_scrape: 'http://a:1/metrics', held: 'sum(x)'}", 1), "held (PromQL, with prometheus.url) and held_scrape (embedded mode) are exclusive"},
	} {
		_, err := Parse([]byte(tc.cfg), "bad.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

// A URL's password is never echoed in a configuration error.
func TestScrapeErrorsRedactPassword(t *testing.T) {
	_, err := Parse([]byte(`targets:
  - name: chat
    metrics: [{type: queue, target: 8}]
    max: 4
    scrape: ["http://u:s3cret@127.0.0.1:8000/metrics", "http://u:s3cret@127.0.0.1:8000/metrics", "ftp://u:s3cret@x/"]
    zero: {held_scrape: "ftp://u:s3cret@y/"}
`), "pw.yaml")
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "u:xxxxx@127.0.0.1:8000") || !strings.Contains(err.Error(), "ftp://u:xxxxx@x/") {
		t.Errorf("err = %v; want the three problems with the password as xxxxx", err)
	}
}
