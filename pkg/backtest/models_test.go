package backtest

import (
	"strings"
	"testing"

	"github.com/prometheus/common/model"
)

// series is a success series of model m with samples every minute from
// minute a to minute b (inclusive) of t0.
func modelSeries(m, pod string, a, b int) *model.SampleStream {
	s := &model.SampleStream{Metric: model.Metric{"model_name": model.LabelValue(m), "pod": model.LabelValue(pod)}}
	for i := a; i <= b; i++ {
		s.Values = append(s.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(at(float64(60 * i)).UnixNano()), Value: model.SampleValue(i)})
	}
	return s
}

// TestConcurrentModels: two models serving side by side for 3 hours (a
// selector over two Deployments) warn, naming both and the 2 hours they
// overlap (minutes 60 to 180); one model, or a rollout from one to the
// next with 10 minutes of both, does not.
func TestConcurrentModels(t *testing.T) {
	two := model.Matrix{modelSeries("llama", "chat-1", 0, 180), modelSeries("qwen", "code-1", 60, 240), modelSeries("llama", "chat-2", 0, 100)}
	w := concurrentModels(two)
	for _, want := range []string{`2 models serving at once ("llama", "qwen", together from 2026-01-05T01:00:00Z to 2026-01-05T03:00:00Z)`, `model_name="llama"`} {
		if !strings.Contains(w, want) {
			t.Errorf("warning %q, want %q in it", w, want)
		}
	}
	if w := concurrentModels(model.Matrix{modelSeries("llama", "chat-1", 0, 180), modelSeries("llama", "chat-2", 0, 180)}); w != "" {
		t.Errorf("one model: %q, want none", w)
	}
	if w := concurrentModels(model.Matrix{modelSeries("llama-3", "chat-1", 0, 130), modelSeries("llama-3.1", "chat-2", 120, 300)}); w != "" {
		t.Errorf("a rollout with 10 minutes of both: %q, want none", w)
	}
	if w := concurrentModels(model.Matrix{{Metric: model.Metric{"pod": "a"}, Values: []model.SamplePair{{Value: 1}}}}); w != "" {
		t.Errorf("no model label: %q, want none", w)
	}
}
