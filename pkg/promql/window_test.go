package promql

import (
	"strings"
	"testing"
	"time"
)

// TestRateWindowHint: pods scraped every 60 s, the demand rates over 1m
// (serve's fixed demand window). Prometheus 3 leaves out a window's start,
// so (t-60s, t] holds one sample of each counter and rate() returns
// nothing: every demand signal is empty every cycle, and the error said
// only "no series", which reads as a family the server lacks (the
// counters are there: 1 request a second, by hand 60/60). The signal
// stays unknown (reason empty) and the error now says the window and the
// scrape interval to use. Scraped every 15 s the same counters read 1
// request a second.
func TestRateWindowHint(t *testing.T) {
	const load = `
  vllm:num_requests_running{namespace="llm",pod="chat-1"} 4x40
  vllm:num_requests_waiting{namespace="llm",pod="chat-1"} 1x40
  vllm:request_success_total{namespace="llm",pod="chat-1"} 0+STEPx40
  vllm:prompt_tokens_total{namespace="llm",pod="chat-1"} 0+STEPx40
  vllm:generation_tokens_total{namespace="llm",pod="chat-1"} 0+STEPx40
  up{namespace="llm",pod="chat-1"} 1x40
`
	for _, tc := range []struct {
		step  string
		every time.Duration
	}{{"60", time.Minute}, {"15", 15 * time.Second}} {
		api := newEngineAPI(t, "")
		api.storage = loadSeries(t, tc.every, strings.ReplaceAll(load, "STEP", tc.step))
		tg := sel(t, `{namespace="llm"}`)
		tg.Demand = true
		r := evalOne(t, api, tg, Options{})
		if r.Values[Running] != 4 || r.Values[Reporting] != 1 {
			t.Fatalf("scraped every %s: running %v reporting %v, want 4 and 1", tc.every, r.Values[Running], r.Values[Reporting])
		}
		for _, s := range []Signal{Arrivals, PromptTokens, GenerationTokens} {
			err := r.Errors[s]
			if tc.every == 15*time.Second {
				if !near(r.Values[s], 1) || err != nil {
					t.Errorf("scraped every 15s: %s %v (%v), want 1", s, r.Values[s], err)
				}
				continue
			}
			if ReasonOf(err) != ReasonEmpty {
				t.Fatalf("scraped every 60s: %s %v (%v), want unknown, reason empty", s, r.Values[s], err)
			}
			for _, want := range []string{"no series, while 1 pod(s) report their gauges", "two samples inside the 1m window", "scraped every 30s or more", "scrape them every 15s or less", "or Prometheus has scraped them for less than the window (it or the pods started under 1m ago: this passes by itself)", "(query: sum(sum by (pod)"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s: error %q lacks %q", s, err, want)
				}
			}
		}
	}
}
