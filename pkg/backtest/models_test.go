package backtest

import (
	"strings"
	"testing"
	"time"

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
	w := concurrentModels(two, time.Minute)
	for _, want := range []string{`2 models serving at once ("llama", "qwen", together from 2026-01-05T01:00:00Z to 2026-01-05T03:00:00Z)`, `model_name="llama"`} {
		if !strings.Contains(w, want) {
			t.Errorf("warning %q, want %q in it", w, want)
		}
	}
	if w := concurrentModels(model.Matrix{modelSeries("llama", "chat-1", 0, 180), modelSeries("llama", "chat-2", 0, 180)}, time.Minute); w != "" {
		t.Errorf("one model: %q, want none", w)
	}
	if w := concurrentModels(model.Matrix{modelSeries("llama-3", "chat-1", 0, 130), modelSeries("llama-3.1", "chat-2", 120, 300)}, time.Minute); w != "" {
		t.Errorf("a rollout with 10 minutes of both: %q, want none", w)
	}
	if w := concurrentModels(model.Matrix{{Metric: model.Metric{"pod": "a"}, Values: []model.SamplePair{{Value: 1}}}}, time.Minute); w != "" {
		t.Errorf("no model label: %q, want none", w)
	}
}

// TestConcurrentModelsOverlapIsTimeShared: the overlap is the time both
// models had samples, not the span between a model's first and last
// sample. By hand, samples every minute: a canary of qwen for minutes
// 60..69 and 300..309 beside llama all along (0..400) overlaps 20
// minutes; a rollout llama -> qwen (qwen from 110) rolled back (llama again
// from 230, qwen gone at 240) overlaps 11 + 11 minutes: no warning for
// either. Before, qwen's first-to-last span (60..309, 110..240) lay inside
// llama's and warned of 249 and 130 minutes at once.
func TestConcurrentModelsOverlapIsTimeShared(t *testing.T) {
	canary := model.Matrix{modelSeries("llama", "chat-1", 0, 400), modelSeries("qwen", "canary-1", 60, 69), modelSeries("qwen", "canary-2", 300, 309)}
	if w := concurrentModels(canary, time.Minute); w != "" {
		t.Errorf("a canary twice for 10 minutes: %q, want none", w)
	}
	rollback := model.Matrix{modelSeries("llama", "chat-1", 0, 120), modelSeries("qwen", "chat-2", 110, 240), modelSeries("llama", "chat-3", 230, 360)}
	if w := concurrentModels(rollback, time.Minute); w != "" {
		t.Errorf("a rollout rolled back: %q, want none", w)
	}
	// Two serving side by side in two stretches, 40 + 40 minutes (minutes
	// 0..39 and 100..139 both): 80 minutes at once, over the hour: warned,
	// together from minute 0 to minute 139.
	two := model.Matrix{modelSeries("llama", "chat-1", 0, 139), modelSeries("qwen", "code-1", 0, 39), modelSeries("qwen", "code-2", 100, 139)}
	if w := concurrentModels(two, time.Minute); !strings.Contains(w, "together from 2026-01-05T00:00:00Z to 2026-01-05T02:19:00Z") {
		t.Errorf("80 minutes at once: %q, want the warning", w)
	}
}

// BenchmarkConcurrentModels: a week at 1 m of 40 pods, two models serving
// side by side (the warning's cost on each backtest read).
func BenchmarkConcurrentModels(b *testing.B) {
	var week model.Matrix
	for i := range 40 {
		m := "llama"
		if i%2 == 1 {
			m = "qwen"
		}
		week = append(week, modelSeries(m, "pod-"+string(rune('a'+i)), 0, 7*24*60))
	}
	b.ResetTimer()
	for b.Loop() {
		if concurrentModels(week, time.Minute) == "" {
			b.Fatal("no warning")
		}
	}
}
