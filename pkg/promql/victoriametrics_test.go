package promql

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/infscale/infscale/internal/promtest"
)

// TestVictoriaMetricsReadsTheLatestSample: VictoriaMetrics hides the last
// 30 s of every query by default (-search.latencyOffset), so serve read a
// burst's queue 20 s after Prometheus did (docs/promql.md#servers). A
// sample 10 s old is the answer, not an empty result.
func TestVictoriaMetricsReadsTheLatestSample(t *testing.T) {
	at := time.Now().Add(-10 * time.Second).Unix()
	url := promtest.StartVictoriaMetrics(t, fmt.Appendf(nil, "# TYPE infscale_fresh gauge\ninfscale_fresh 7 %d\n# EOF\n", at))
	c, err := NewClient(ClientConfig{URL: url, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	v, _, err := c.Instant(context.Background(), "infscale_fresh", time.Now())
	if err != nil {
		t.Fatalf("a sample 10 s old: %v", err)
	}
	if len(v) != 1 || v[0].Value != 7 {
		t.Fatalf("a sample 10 s old: got %v, want infscale_fresh 7", v)
	}
	if MetricsQL(context.Background(), c) != true {
		t.Error("MetricsQL(VictoriaMetrics) = false")
	}
}
