package replay

import (
	"testing"

	"github.com/infscale/infscale/pkg/recommend"
)

func TestFromRecommend(t *testing.T) {
	p, err := FromRecommend("config:chat", &recommend.Policy{Min: 2, Max: 8,
		Metrics: []recommend.Metric{{Signal: recommend.SignalQueue, Target: 24}}})
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "config:chat" || p.min != 2 || p.Recommend == nil {
		t.Errorf("policy %+v, want name config:chat, min 2", p)
	}
	if _, err := FromRecommend("bad", &recommend.Policy{Min: 3, Max: 1}); err == nil {
		t.Error("min > max: want an error")
	}
}
