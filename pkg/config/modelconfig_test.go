package config

import (
	"strings"
	"testing"

	"github.com/infscale/infscale/pkg/recommend"
	"github.com/infscale/infscale/pkg/replica"
)

// TestReplicaModelConfig: model_config names a Hugging Face config.json
// (Yi-34B's) in place of model; the capacity is the one that model's
// replica gives. Both keys at once are an error at model_config.
func TestReplicaModelConfig(t *testing.T) {
	doc := func(rep string) []byte {
		return []byte("targets:\n- name: chat\n  scrape: [http://10.0.0.5:8000/metrics]\n  metrics: [{type: demand, target: 0.8}]\n  replica: " + rep + "\n  max: 8\n")
	}
	cfg, err := Parse(doc("{gpu: h100-sxm, model_config: ../replica/testdata/hf/yi-34b.json, tp: 2}"), "m.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := cfg.Targets[0].Policy()
	if err != nil {
		t.Fatal(err)
	}
	c := replica.DefaultConfig()
	c.Model, _ = replica.LookupModel("yi-34b")
	// A config.json has no "34B" in it: its nominal size is the derived count.
	c.Model.NominalParams = c.Model.Params()
	c.TP = 2
	m, err := replica.New(c)
	if err != nil {
		t.Fatal(err)
	}
	if want := recommend.CapacityFrom(m); p.Capacity == nil || *p.Capacity != *want {
		t.Errorf("capacity %+v, want %+v", p.Capacity, want)
	}
	_, err = Parse(doc("{gpu: h100-sxm, model: yi-34b, model_config: ../replica/testdata/hf/yi-34b.json}"), "m.yaml")
	if err == nil || !strings.Contains(err.Error(), "model_config: give model or model_config, not both") {
		t.Errorf("both: err = %v", err)
	}
}
