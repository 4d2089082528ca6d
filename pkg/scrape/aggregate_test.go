package scrape

import (
	"math"
	"testing"

	"github.com/infscale/infscale/pkg/modelserver"
)

func TestAggregate(t *testing.T) {
	a := readString(t, "vllm:num_requests_running{engine=\"0\"} 3\nvllm:num_requests_running{engine=\"1\"} 5\nvllm:num_requests_waiting{engine=\"0\"} 1\nvllm:num_requests_waiting{engine=\"1\"} 2\nvllm:kv_cache_usage_perc{engine=\"0\"} 0.35\nvllm:kv_cache_usage_perc{engine=\"1\"} 0.81\n", modelserver.Unknown)
	b := readString(t, "vllm:num_requests_running 4\nvllm:num_requests_waiting 0\nvllm:kv_cache_usage_perc 0.2\n", modelserver.Unknown)
	c := readString(t, "# TYPE vllm:num_requests_running gauge\n", modelserver.Unknown) // not reporting
	d := readString(t, "llamacpp:requests_processing 1\n", modelserver.Unknown)         // no waiting, no KV

	// Issue 2 acceptance, data-parallel page alone: queue 3+5+1+2 = 11, kv max(0.35, 0.81) = 0.81.
	one := Aggregate([]*Page{a})
	checkFloat(t, "queue", one.Running+one.Waiting, 11)
	checkFloat(t, "kv", one.KV, 0.81)

	tot := Aggregate([]*Page{a, b, c, d, nil})
	// running 8 + 4 + 1 = 13 over 3 pages; waiting 3 + 0 = 3 over 2;
	// kv mean(0.81, 0.2) = 0.505 over 2; reporting a, b, d = 3 of 5.
	checkFloat(t, "running", tot.Running, 13)
	checkFloat(t, "waiting", tot.Waiting, 3)
	checkFloat(t, "kv", tot.KV, 0.505)
	// queued: a waits 1 + 2 = 3 > 0, b waits 0: one page holds a queue.
	if tot.Pages != 5 || tot.Reporting != 3 || tot.RunningReporting != 3 || tot.WaitingReporting != 2 || tot.KVReporting != 2 || tot.Queued != 1 || len(tot.Suspect) != 0 {
		t.Errorf("counts %+v", tot)
	}

	none := Aggregate([]*Page{c, nil})
	checkFloat(t, "running of none", none.Running, A)
	checkFloat(t, "waiting of none", none.Waiting, A)
	checkFloat(t, "kv of none", none.KV, A)
}

// Issue 13 item 3: a replica whose page has a non-finite engine sample has
// an unknown value, and the total with it (as PromQL's sum over a NaN
// sample): four pages running{engine="0"} 2, running{engine="1"} NaN sum
// to unknown, not 8; waiting, all finite, still sums to 0.
func TestAggregateEngineNaNIsUnknown(t *testing.T) {
	var pages []*Page
	for i := 0; i < 4; i++ {
		p := readString(t, "vllm:num_requests_running{engine=\"0\"} 2\nvllm:num_requests_running{engine=\"1\"} NaN\nvllm:num_requests_waiting{engine=\"0\"} 0\n", modelserver.VLLM)
		if len(p.Unknown) != 1 || p.Unknown[0] != "running" {
			t.Fatalf("Unknown %v, want [running]", p.Unknown)
		}
		pages = append(pages, p)
	}
	tot := Aggregate(pages)
	if !math.IsNaN(tot.Running) || tot.Waiting != 0 || len(tot.Unknown) != 4 {
		t.Errorf("running %v waiting %v unknown %v: want NaN, 0 and the four pages", tot.Running, tot.Waiting, tot.Unknown)
	}
}

// Two finite pages whose running sum exceeds float64 (1e308 + 1e308 >
// 1.798e308) saturate at the largest float64, not an unknown +Inf. (Read
// refuses a request count above MaxRequests, so such a page is built here.)
func TestAggregateOverflowSaturates(t *testing.T) {
	p := readString(t, "vllm:num_requests_running 1\nvllm:num_requests_waiting 1\n", modelserver.Unknown)
	p.Running = 1e308
	tot := Aggregate([]*Page{p, p})
	if tot.Running != math.MaxFloat64 {
		t.Errorf("running %g, want MaxFloat64", tot.Running)
	}
	checkFloat(t, "waiting", tot.Waiting, 2)
}
