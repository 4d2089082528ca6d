package main

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// Pages Prometheus's parser accepts but that are garbage: parse exits 2,
// names FILE:LINE, and prints no row, next to a good page too (no partial
// output, no invented value).
func TestParseGarbagePages(t *testing.T) {
	dir := t.TempDir()
	good := writePage(t, dir, "good.prom", "vllm:num_requests_running 2\nvllm:num_requests_waiting 10\n")
	for _, tc := range []struct{ name, body, want string }{
		// "waiting 5" after a NUL line was silently dropped (waiting ABSENT).
		{"nul.prom", "vllm:num_requests_running 1\n\x00\nvllm:num_requests_waiting 5\n", "nul.prom:2: invalid metrics page: NUL byte"},
		// running 2 + 3 = 5 was printed for one engine.
		{"dup.prom", "vllm:num_requests_running{engine=\"0\"} 2\nvllm:num_requests_running{engine=\"0\"} 3\n", "dup.prom:2: invalid metrics page: series"},
		// waiting -3 was printed, and decide scaled on KV 1.7.
		{"neg.prom", "vllm:num_requests_running 1\nvllm:num_requests_waiting -3\n", "neg.prom:2: invalid metrics page:"},
		{"kv.prom", "vllm:num_requests_running 1\nvllm:kv_cache_usage_perc 1.7\n", "kv.prom:2: invalid metrics page:"},
		// "waiting 3" may be the start of "35": the last line has no newline.
		{"cut.prom", "vllm:num_requests_running 2\nvllm:num_requests_waiting 3", "cut.prom:2: invalid metrics page: the last line does not end with a newline"},
	} {
		bad := writePage(t, dir, tc.name, tc.body)
		code, out, errs := runParseCLI(t, nil, good, bad)
		if code != 2 || out != "" || !strings.Contains(errs, tc.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want 2, nothing, %q", tc.name, code, out, errs, tc.want)
		}
	}
}

// A URL with a password: the row shows it hidden, and the second scrape of
// --interval still authenticates (it used to re-fetch Page.Source).
func TestParseIntervalWithPassword(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, p, ok := r.BasicAuth(); !ok || p != "secret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		// 100 prompt tokens more per scrape
		fmt.Fprintf(w, "vllm:num_requests_running 1\nvllm:prompt_tokens_total %d\n", 100*n.Add(1))
	}))
	defer srv.Close()
	url := strings.Replace(srv.URL, "http://", "http://u:secret@", 1)
	code, out, errs := runParseCLI(t, nil, "--output", "json", "--interval", "100ms", url)
	if code != 0 || strings.Contains(out+errs, "secret") {
		t.Fatalf("exit %d\n%s%s", code, out, errs)
	}
	rows := decodeRows(t, out)
	if len(rows) != 1 || !strings.Contains(rows[0].Source, "u:xxxxx@") || rows[0].Rates == nil ||
		math.Abs(*rows[0].Rates.PromptTokens*rows[0].Rates.IntervalSeconds-100) > 1e-6 {
		t.Errorf("rows = %+v, want the password hidden and 100 tokens over the interval", rows)
	}
}
