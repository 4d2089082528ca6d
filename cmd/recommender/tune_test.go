package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/replay"
)

// TestTuneReference: tune on the reference trace prints JSON with the
// documented fields; the winner is a policy simulate accepts, and its serve
// block loads; the plot is written.
func TestTuneReference(t *testing.T) {
	plot := filepath.Join(t.TempDir(), "tune.svg")
	var out, errb bytes.Buffer
	code := run(context.Background(), []string{"tune", "--trace", "reference", "--output", "json", "--plot", plot}, nil, &out, &errb)
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	var rep struct {
		Policy   string `json:"policy"`
		InSample *struct {
			MissPct        *float64 `json:"miss_pct"`
			ReplicaMinutes *float64 `json:"replica_minutes"`
		} `json:"in_sample"`
		OutOfSample *struct {
			MissPct        *float64 `json:"miss_pct"`
			ReplicaMinutes *float64 `json:"replica_minutes"`
		} `json:"out_of_sample"`
		Frontier    []map[string]any `json:"frontier"`
		ServeTarget string           `json:"serve_target"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if _, err := replay.ParsePolicy(rep.Policy); err != nil {
		t.Errorf("policy %q: %v", rep.Policy, err)
	}
	if rep.InSample == nil || rep.InSample.MissPct == nil || rep.InSample.ReplicaMinutes == nil ||
		rep.OutOfSample == nil || rep.OutOfSample.MissPct == nil || rep.OutOfSample.ReplicaMinutes == nil || len(rep.Frontier) == 0 {
		t.Errorf("JSON lacks in_sample, out_of_sample or frontier:\n%s", out.String())
	}
	if _, err := config.Parse([]byte("prometheus:\n  url: http://prometheus:9090\n"+rep.ServeTarget), "tune.yaml"); err != nil {
		t.Errorf("serve block does not load: %v\n%s", err, rep.ServeTarget)
	}
}

func TestTuneBadInput(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"tune"}, "no source"},
		{[]string{"tune", "--trace", "reference", "--max-miss", "-1"}, "--max-miss"},
		{[]string{"tune", "--trace", "reference", "--holdout", "1"}, "--holdout"},
		{[]string{"tune", "--trace", "reference", "--plot", "x.pdf"}, "--plot"},
		{[]string{"tune", "--trace", "reference", "--prometheus-url", "http://127.0.0.1:1"}, "one source"},
		{[]string{"tune", "--trace", "nope.csv"}, "--trace"},
	} {
		var out, errb bytes.Buffer
		if code := run(context.Background(), c.args, nil, &out, &errb); code != exitInvalid || !strings.Contains(errb.String(), c.want) {
			t.Errorf("%v: exit %d, %q; want exit %d naming %s", c.args, code, errb.String(), exitInvalid, c.want)
		}
	}
}
