package serve

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/internal/epptest"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/recommend"
)

// TestPairEPPPageHint: an EPP's page listed in a P/D pool's scrape (the
// pair's server left at vllm) is not read, and the warning says why for a
// pair: the hint was "give the server as epp", which a pair refuses (the
// EPP's page is the whole InferencePool, both roles). A one-pool target
// keeps the server hint.
func TestPairEPPPageHint(t *testing.T) {
	epp := epptest.Serve(eppBusyPool())
	defer epp.Close()
	p0 := runningPage(6)
	defer p0.Close()
	cfg, err := config.Parse([]byte(fmt.Sprintf(`targets:
  - name: chat
    server: vllm
    roles:
      prefill:
        scrape: [%s/metrics]
        metrics: [{type: running, target: 2}]
        maxReplicaCount: 8
      decode:
        scrape: [%s/metrics]
        metrics: [{type: running, target: 4}]
        maxReplicaCount: 8
  - name: solo
    server: vllm
    scrape: [%s/metrics]
    metrics: [{type: running, target: 4}]
    maxReplicaCount: 8
`, p0.URL, epp.URL, epp.URL)), "pd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec, ok := cfg.Targets[0].RoleTarget(recommend.RoleDecode)
	if !ok || dec.Key() != "chat@decode" {
		t.Fatalf("decode role: %v %q", ok, dec.Key())
	}
	rds := NewScrapeSource(5*time.Second).Read(t.Context(), []*config.Target{&dec, &cfg.Targets[1]}, time.Now())
	want := []string{
		epp.URL + "/metrics: an llm-d Endpoint Picker's page, in the decode pool's scrape list: a P/D pair is read from each role's model-server pods, not from the EPP, whose page is the whole InferencePool (both roles); list the decode pods' /metrics in roles.decode.scrape",
		"the page is epp's, not vllm's",
	}
	for i, rd := range rds {
		var got []string
		for _, e := range rd.Errors {
			if e.Signal == "page" {
				got = append(got, e.Reason+": "+e.Err.Error())
			}
		}
		if len(got) != 1 || !strings.HasPrefix(got[0], "bad_response: ") || !strings.Contains(got[0], want[i]) {
			t.Errorf("target %d: page errors %q, want one bad_response with %q", i, got, want[i])
		}
	}
}

// TestAutoEPPPage: with server: auto an EPP's page was detected and read
// as one replica's: current 1 for a pool of 2 ready endpoints (eppBusyPool
// has two fresh endpoints), the pool's running as that replica's. It is a
// page read error saying to give server: epp, and the page does not vote
// (current unknown). In a P/D pool it says to list the role's pods.
func TestAutoEPPPage(t *testing.T) {
	epp := epptest.Serve(eppBusyPool())
	defer epp.Close()
	p0 := runningPage(6)
	defer p0.Close()
	cfg, err := config.Parse([]byte(fmt.Sprintf(`targets:
  - name: solo
    server: auto
    scrape: [%s/metrics]
    metrics: [{type: queue, target: 24}]
    maxReplicaCount: 8
  - name: chat
    server: auto
    roles:
      prefill:
        scrape: [%s/metrics]
        metrics: [{type: running, target: 2}]
        maxReplicaCount: 8
      decode:
        scrape: [%s/metrics]
        metrics: [{type: running, target: 4}]
        maxReplicaCount: 8
`, epp.URL, epp.URL, p0.URL)), "auto.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pre, _ := cfg.Targets[1].RoleTarget(recommend.RolePrefill)
	rds := NewScrapeSource(5*time.Second).Read(t.Context(), []*config.Target{&cfg.Targets[0], &pre}, time.Now())
	want := []string{
		epp.URL + "/metrics: an llm-d Endpoint Picker's page, read with server: auto as one replica's: the EPP's page describes its whole InferencePool (its ready endpoints, their mean load, the flow-control queue); give the target server: epp",
		epp.URL + "/metrics: an llm-d Endpoint Picker's page, in the prefill pool's scrape list",
	}
	for i, rd := range rds {
		if rd.CurrentKnown {
			t.Errorf("target %d: current %d known, want unknown (the EPP's page is no replica)", i, rd.Obs.Current)
		}
		var got []string
		for _, e := range rd.Errors {
			if e.Signal == "page" {
				got = append(got, e.Reason+": "+e.Err.Error())
			}
		}
		if len(got) != 1 || !strings.HasPrefix(got[0], "bad_response: "+want[i]) {
			t.Errorf("target %d: page errors %q, want one bad_response: %q", i, got, want[i])
		}
	}
}
