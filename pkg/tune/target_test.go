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

// atZeroAPI is a Prometheus where a scale-to-zero target has been at
// zero throughout: its replicas query reads 0 at every step, and the
// model server's series (no pod to export them) have no samples.
type atZeroAPI struct{ replicas string } // the replicas query's start

func (atZeroAPI) Instant(context.Context, string, time.Time) (model.Vector, []string, error) {
	return model.Vector{}, nil, nil
}

func (a atZeroAPI) Range(_ context.Context, q string, start, end time.Time, step time.Duration) (model.Matrix, []string, error) {
	if !strings.HasPrefix(q, a.replicas) { // the query as printed canonically
		return model.Matrix{}, nil, nil
	}
	s := &model.SampleStream{Metric: model.Metric{}}
	for at := start; !at.After(end); at = at.Add(step) {
		s.Values = append(s.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(at.UnixNano()), Value: 0})
	}
	return model.Matrix{s}, nil, nil
}

// TestTuneTargetAtZeroThroughout: a target that scales to zero and was at
// zero over its whole history (its replicas: query reads 0; no pod, so
// no request counter) has nothing to tune on yet, as a new target: the
// run is ErrShortHistory (tune --shard reports it skipped, serve logs it
// at INFO and tries again), saying the target was at zero. It failed
// as a selector matching nothing does: an idle scale-to-zero target
// failed its CronJob shard (exit 1, retried, the index marked failed)
// every run. The same target without a replicas: query still fails.
func TestTuneTargetAtZeroThroughout(t *testing.T) {
	const replicas = `sum(kube_deployment_spec_replicas{namespace="llm",deployment="chat"})`
	f, err := config.Parse([]byte(`prometheus: {url: "http://prometheus:9090"}
targets:
- name: chat
  server: vllm
  selector: '{namespace="llm",deployment="chat"}'
  replicas: '`+replicas+`'
  metrics: [{type: queue, target: 24}]
  minReplicaCount: 0
  maxReplicaCount: 8
  zero: {cooldownPeriod: 2m, held: 'sum(infscale_activator_held_requests)'}
  replica: {gpu: h100-sxm, model: llama-3-8b}
  tune: {history: 1h}
`), "tune.yaml")
	if err != nil {
		t.Fatal(err)
	}
	now := time.Date(2026, 1, 5, 12, 0, 0, 0, time.UTC)
	_, err = TuneTarget(context.Background(), atZeroAPI{"sum(kube_deployment_spec_replicas"}, &f.Targets[0], now, TargetOptions{})
	if !errors.Is(err, ErrShortHistory) || !strings.Contains(err.Error(), "at zero") {
		t.Errorf("at zero throughout: %v; want ErrShortHistory saying the target was at zero", err)
	}
	f.Targets[0].Replicas = ""
	_, err = TuneTarget(context.Background(), atZeroAPI{"sum(kube_deployment_spec_replicas"}, &f.Targets[0], now, TargetOptions{})
	if !errors.Is(err, backtest.ErrNoTraffic) || errors.Is(err, ErrShortHistory) {
		t.Errorf("without a replicas: query: %v; want ErrNoTraffic, not ErrShortHistory", err)
	}
}
