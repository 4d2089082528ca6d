package replay

import (
	"context"
	"strings"
	"testing"

	"github.com/infscale/infscale/pkg/recommend"
	"github.com/infscale/infscale/pkg/trace"
)

// TestFromRecommendPairBounds: a pair of config policies replays within
// each role's bounds: a queue policy pinned at 2 prefill and 3 decode
// replicas (min = max) holds them over the 30 s trace, 60 + 90
// replica-seconds; a role's invalid policy is named.
func TestFromRecommendPairBounds(t *testing.T) {
	q := func(n int) *recommend.Policy {
		return &recommend.Policy{Metrics: []recommend.Metric{{Signal: recommend.SignalQueue, Target: 24}}, Min: n, Max: n}
	}
	pol, err := FromRecommendPair("config:chat", q(2), q(3))
	if err != nil {
		t.Fatal(err)
	}
	src := trace.FromSlice("one", 30, []trace.Request{{Arrival: 1, Prompt: 1000, Output: 3}})
	res, err := RunPD(context.Background(), src, pol, Config{Model: linKV{}}, PDConfig{KVLinkBytesPerSecond: 1e9})
	if err != nil {
		t.Fatal(err)
	}
	if res.Policy != "config:chat" || !near(res.Prefill.ReplicaSeconds, 60) || !near(res.Decode.ReplicaSeconds, 90) || res.Met != 1 {
		t.Errorf("%s: replica seconds %v + %v, met %d; want 60 + 90, 1 met", res.Policy, res.Prefill.ReplicaSeconds, res.Decode.ReplicaSeconds, res.Met)
	}
	bad := q(3)
	bad.Max = 1
	if _, err := FromRecommendPair("config:chat", q(1), bad); err == nil || !strings.Contains(err.Error(), "config:chat (decode)") {
		t.Errorf("err %v; want the decode role's policy named", err)
	}
}

// TestPairOfFollow: two Follow timelines, one per pool, as backtest
// replays what each pool of a pair ran: 2 and 3 replicas over 30 s are 60
// and 90 replica-seconds. A searching policy is refused.
func TestPairOfFollow(t *testing.T) {
	pp, err := Follow("actual", 15, []float64{2, 2, 2})
	if err != nil {
		t.Fatal(err)
	}
	dp, err := Follow("actual", 15, []float64{3, 3, 3})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := PairOf("actual", pp, dp)
	if err != nil {
		t.Fatal(err)
	}
	src := trace.FromSlice("one", 30, []trace.Request{{Arrival: 1, Prompt: 1000, Output: 3}})
	res, err := RunPD(context.Background(), src, pol, Config{Model: linKV{}}, PDConfig{KVLinkBytesPerSecond: 1e9})
	if err != nil {
		t.Fatal(err)
	}
	if !near(res.Prefill.ReplicaSeconds, 60) || !near(res.Decode.ReplicaSeconds, 90) {
		t.Errorf("replica seconds %v + %v; want 60 + 90", res.Prefill.ReplicaSeconds, res.Decode.ReplicaSeconds)
	}
	opt, err := ParsePolicy("optimal")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := PairOf("x", opt, dp); err == nil {
		t.Error("PairOf with optimal: no error")
	}
}
