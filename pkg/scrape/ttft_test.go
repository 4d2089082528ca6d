package scrape

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/modelserver"
)

func ttftPage(t *testing.T, sec int, start string, b1, b2, inf float64) *Page {
	t.Helper()
	page := "process_start_time_seconds " + start + "\n# TYPE vllm:time_to_first_token_seconds histogram\n" +
		"vllm:time_to_first_token_seconds_bucket{le=\"0.5\"} " + ftoa(b1) + "\n" +
		"vllm:time_to_first_token_seconds_bucket{le=\"2\"} " + ftoa(b2) + "\n" +
		"vllm:time_to_first_token_seconds_bucket{le=\"+Inf\"} " + ftoa(inf) + "\n" +
		"vllm:time_to_first_token_seconds_count " + ftoa(inf) + "\n" +
		"vllm:time_to_first_token_seconds_sum 10\n"
	p := readString(t, page, modelserver.VLLM)
	p.Time = t0.Add(time.Duration(sec) * time.Second)
	return p
}

func ftoa(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

func TestTTFTQuantile(t *testing.T) {
	prev := ttftPage(t, 0, "1699990000", 10, 20, 20)
	cur := ttftPage(t, 15, "1699990000", 10, 30, 40)
	inc := HistogramIncrease(prev, cur)
	if inc == nil {
		t.Fatal("no increase")
	}
	// increases: le 0.5: 0, le 2: 10, +Inf: 20 (count 20).
	// p50: rank 10 -> bucket le 2 (count 10 >= 10): 0.5 + (2-0.5)*(10-0)/(10-0) = 2.
	// p25: rank 5 -> bucket le 2: 0.5 + 1.5*5/10 = 1.25.
	// p95: rank 19 -> +Inf bucket -> highest finite bound 2.
	checkFloat(t, "p50", inc.Quantile(0.5), 2)
	checkFloat(t, "p25", inc.Quantile(0.25), 1.25)
	checkFloat(t, "p95", inc.Quantile(0.95), 2)
	// first bucket from 0: cur alone, rank 0.25*40 = 10 -> le 0.5: 0 + 0.5*10/10 = 0.5;
	// rank 0.1*40 = 4 -> 0.5*4/10 = 0.2.
	checkFloat(t, "cur p10", cur.TTFT.Quantile(0.1), 0.2)

	// No request in the interval: NaN (the signal abstains), not 0.
	checkFloat(t, "idle p95", HistogramIncrease(cur, ttftPage(t, 30, "1699990000", 10, 30, 40)).Quantile(0.95), A)
	// Restart (the process started at t0+20 s, after the scrape at t0+15 s):
	// the increase is the new histogram (le 2: 1 of 2 -> p50 = 0.5 + 1.5*1/1 = 2).
	restart := HistogramIncrease(cur, ttftPage(t, 30, "1700000020", 0, 1, 2))
	checkFloat(t, "restart p50", restart.Quantile(0.5), 2)
	if HistogramIncrease(nil, cur) != nil || HistogramIncrease(cur, cur) != nil {
		t.Error("increase without a baseline")
	}
	for _, q := range []float64{-0.1, 1.1, math.NaN()} {
		checkFloat(t, "bad q", inc.Quantile(q), A)
	}
}

// TestSGLangQueueTimeAndITL: SGLang's collector exports the queue-time and
// ITL histograms as sglang:queue_time_seconds and
// sglang:inter_token_latency_seconds (sgl-project/sglang
// python/sglang/srt/metrics/collector.py); the page's buckets are read as
// written, labels (model_name) summed.
func TestSGLangQueueTimeAndITL(t *testing.T) {
	page := `# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="m"} 3
# TYPE sglang:queue_time_seconds histogram
sglang:queue_time_seconds_bucket{model_name="m",le="0.1"} 4
sglang:queue_time_seconds_bucket{model_name="m",le="1"} 9
sglang:queue_time_seconds_bucket{model_name="m",le="+Inf"} 10
sglang:queue_time_seconds_sum{model_name="m"} 2.5
sglang:queue_time_seconds_count{model_name="m"} 10
# TYPE sglang:inter_token_latency_seconds histogram
sglang:inter_token_latency_seconds_bucket{model_name="m",le="0.01"} 50
sglang:inter_token_latency_seconds_bucket{model_name="m",le="+Inf"} 60
sglang:inter_token_latency_seconds_sum{model_name="m"} 0.9
sglang:inter_token_latency_seconds_count{model_name="m"} 60
`
	p := readString(t, page, modelserver.SGLang)
	for _, c := range []struct {
		name   string
		h      *Histogram
		family string
		count  float64
		le     []float64
		cum    []float64
	}{
		{"queue time", p.QueueTime, "sglang:queue_time_seconds", 10, []float64{0.1, 1, math.Inf(1)}, []float64{4, 9, 10}},
		{"itl", p.ITL, "sglang:inter_token_latency_seconds", 60, []float64{0.01, math.Inf(1)}, []float64{50, 60}},
	} {
		if c.h == nil {
			t.Errorf("%s: not read", c.name)
			continue
		}
		if c.h.Family != c.family || c.h.Count != c.count || len(c.h.Buckets) != len(c.le) {
			t.Errorf("%s: %+v, want family %s, count %g, %d buckets", c.name, c.h, c.family, c.count, len(c.le))
			continue
		}
		for i, b := range c.h.Buckets {
			if b.UpperBound != c.le[i] || b.Count != c.cum[i] {
				t.Errorf("%s bucket %d: %+v, want le %g count %g", c.name, i, b, c.le[i], c.cum[i])
			}
		}
	}
}

// A histogram series without its le="+Inf" bucket (an excerpt cut before
// it; no client library writes one) holds an unknown number of
// observations above its largest bound: PromQL's histogram_quantile of it
// is NaN. Merged with another engine's complete series, its observations
// above 1 s vanished (Merge counts it at +Inf with its count at le 1) and
// the page's p90 read 1 s instead of unknown.
func TestHistogramSeriesWithoutInf(t *testing.T) {
	const head = "vllm:num_requests_running{engine=\"0\"} 1\nvllm:num_requests_running{engine=\"1\"} 1\n# TYPE vllm:time_to_first_token_seconds histogram\n"
	complete := "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.1\"} 2\n" +
		"vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"1.0\"} 4\n" +
		"vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"+Inf\"} 4\n" +
		"vllm:time_to_first_token_seconds_count{engine=\"0\"} 4\n"
	cut := "vllm:time_to_first_token_seconds_bucket{engine=\"1\",le=\"0.1\"} 0\n" +
		"vllm:time_to_first_token_seconds_bucket{engine=\"1\",le=\"1.0\"} 1\n" +
		"vllm:time_to_first_token_seconds_count{engine=\"1\"} 16\n"

	// Engine 0 alone: 4 observations, 2 <= 0.1 s, 2 in (0.1, 1]. p50: rank
	// 2 in bucket le 0.1: 0.1 * 2/2 = 0.1; p90: rank 3.6 in le 1: 0.1 +
	// 0.9 * (3.6-2)/(4-2) = 0.82.
	p := readString(t, head+complete, modelserver.VLLM)
	checkFloat(t, "complete p50", p.TTFT.Quantile(0.5), 0.1)
	checkFloat(t, "complete p90", p.TTFT.Quantile(0.9), 0.82)

	for name, page := range map[string]string{"one series": cut, "beside a complete one": complete + cut} {
		p := readString(t, head+page, modelserver.VLLM)
		if p.TTFT == nil || p.TTFT.Family != "vllm:time_to_first_token_seconds" {
			t.Fatalf("%s: TTFT = %+v, want the family, its quantiles unknown", name, p.TTFT)
		}
		for _, q := range []float64{0.5, 0.9} {
			checkFloat(t, name+" p"+ftoa(100*q), p.TTFT.Quantile(q), A)
		}
	}
}
