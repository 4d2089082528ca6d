package tune

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/pkg/backtest"
	"github.com/infscale/infscale/pkg/config"
)

// emptyAPI is a Prometheus where the selector matches nothing: every
// query answers with no series.
type emptyAPI struct{}

func (emptyAPI) Instant(context.Context, string, time.Time) (model.Vector, []string, error) {
	return model.Vector{}, nil, nil
}

func (emptyAPI) Range(context.Context, string, time.Time, time.Time, time.Duration) (model.Matrix, []string, error) {
	return model.Matrix{}, nil, nil
}

// TestTuneTargetNoTraffic: a target whose selector matches no series (a
// label the Deployment's series do not carry) fails, as backtest does,
// naming the counter it read, the hour it read it over (history 1h ending
// at 12:00) and what to check; errors.Is still finds ErrNoTraffic.
func TestTuneTargetNoTraffic(t *testing.T) {
	f, err := config.Parse([]byte(`prometheus: {url: "http://prometheus:9090"}
targets:
- name: chat
  server: vllm
  selector: '{namespace="llm",deployment="chat"}'
  metrics: [{type: queue, target: 24}]
  maxReplicaCount: 8
  replica: {gpu: h100-sxm, model: llama-3-8b}
  tune: {history: 1h}
`), "tune.yaml")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	_, err = TuneTarget(context.Background(), emptyAPI{}, &f.Targets[0], now, TargetOptions{})
	want := `target chat: history: no request completed in the range: the success counter has no samples: vllm:request_success_total{namespace="llm",deployment="chat"} over 2026-01-05T11:00:00Z..2026-01-05T12:00:00Z (check the target's selector: and server:)`
	if !errors.Is(err, backtest.ErrNoTraffic) || err.Error() != want {
		t.Errorf("err = %v; want ErrNoTraffic:\n%s", err, want)
	}
}
