package tune

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/pkg/backtest"
	"github.com/infscale/infscale/pkg/config"
)

// denseAPI is a Prometheus whose success counter grows by rate requests
// a second, sampled at every step; every other query answers no series.
type denseAPI struct{ rate float64 }

func (denseAPI) Instant(context.Context, string, time.Time) (model.Vector, []string, error) {
	return model.Vector{}, nil, nil
}

func (a denseAPI) Range(_ context.Context, q string, start, end time.Time, step time.Duration) (model.Matrix, []string, error) {
	// The counter, and its samples' times (a fresh sample at each step).
	stamp := strings.HasPrefix(q, "timestamp(vllm:request_success_total")
	if !stamp && !strings.HasPrefix(q, "vllm:request_success_total") {
		return model.Matrix{}, nil, nil
	}
	s := &model.SampleStream{Metric: model.Metric{"pod": "chat-0"}}
	for at := start; !at.After(end); at = at.Add(step) {
		v := a.rate * at.Sub(start).Seconds()
		if stamp {
			v = float64(at.Unix())
		}
		s.Values = append(s.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(at.UnixNano()), Value: model.SampleValue(v)})
	}
	return model.Matrix{s}, nil, nil
}

// TestTuneTargetTooManyRequests: a history whose arrivals total more than
// backtest.MaxReconstructed is refused by backtest.Reconstruct, whose
// message said "backtest a shorter range (--start, --end)": serve's
// tuning and tune --shard have no such flags, their range is the tune:
// block's history. By hand: 80,000 req/s over two days of history:
// 1.3824e10 requests, more than 8,589,934,592; the error names
// tune.history.
func TestTuneTargetTooManyRequests(t *testing.T) {
	f, err := config.Parse([]byte(`prometheus: {url: "http://prometheus:9090"}
targets:
- name: chat
  server: vllm
  selector: '{namespace="llm"}'
  metrics: [{type: queue, target: 24}]
  maxReplicaCount: 8
  replica: {gpu: h100-sxm, model: llama-3-8b}
  tune: {history: 2d}
`), "tune.yaml")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	_, err = TuneTarget(context.Background(), denseAPI{rate: 80000}, &f.Targets[0], now, TargetOptions{})
	want := "target chat: history: too many requests to replay: the range's reconstructed arrivals total 1.382e+10 requests, more than the 8589934592 (2^33) a replay of history takes (each policy's replay would take an hour or more) over 2026-01-03T12:00:00Z..2026-01-05T12:00:00Z; lower tune.history (2d)"
	if !errors.Is(err, backtest.ErrTooManyRequests) || err == nil || err.Error() != want {
		t.Errorf("err = %v; want ErrTooManyRequests:\n%s", err, want)
	}
}
