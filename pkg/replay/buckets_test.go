package replay

import (
	"slices"
	"testing"

	"github.com/infscale/infscale/pkg/modelserver"
)

// TestBucketsAreModelServers: the replay's TTFT and queue-time bucket
// bounds are vLLM's as pkg/modelserver states them (one list each, copied
// here only to keep the replay's imports lean: deploy/kubee2e builds it).
func TestBucketsAreModelServers(t *testing.T) {
	if got, want := ttftBuckets.bounds, modelserver.VLLM.TTFTBuckets(); !slices.Equal(got, want) {
		t.Errorf("TTFT buckets %v, modelserver's %v", got, want)
	}
	if got, want := queueBuckets.bounds, modelserver.VLLM.QueueTimeBuckets(); !slices.Equal(got, want) {
		t.Errorf("queue-time buckets %v, modelserver's %v", got, want)
	}
}
