package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/infscale/infscale/pkg/recommend"
)

const pdGood = `targets:
  - name: chat
    replica: {gpu: h100-sxm, model: llama-3-8b}
    roles:
      prefill:
        scrape: [http://p0:8000/metrics]
        metrics: [{type: demand, target: 0.8}]
        maxReplicaCount: 4
      decode:
        scrape: [http://d0:8000/metrics, http://d1:8000/metrics]
        metrics: [{type: demand, target: 0.8}, {type: kv, target: 0.9}]
        minReplicaCount: 2
        maxReplicaCount: 8
`

// TestPairConfig loads a P/D target and checks each role's one-pool
// target: its own scrape, bounds and metrics, and the decode role's
// capacity prefilling nothing (Capacity.ForRole).
func TestPairConfig(t *testing.T) {
	cfg, err := Parse([]byte(pdGood), "pd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tg := &cfg.Targets[0]
	p, ok := tg.RoleTarget(recommend.RolePrefill)
	d, ok2 := tg.RoleTarget(recommend.RoleDecode)
	if !ok || !ok2 || !tg.Pair() {
		t.Fatal("roles missing")
	}
	if p.Name != "chat" || len(p.Scrape.URLs) != 1 || *p.Min != 1 || *p.Max != 4 || p.Role != recommend.RolePrefill {
		t.Errorf("prefill = %+v", p)
	}
	if len(d.Scrape.URLs) != 2 || *d.Min != 2 || *d.Max != 8 || len(d.Metrics) != 2 {
		t.Errorf("decode = %+v", d)
	}
	pp, err := p.Policy()
	if err != nil {
		t.Fatal(err)
	}
	dp, err := d.Policy()
	if err != nil {
		t.Fatal(err)
	}
	if pp.Capacity == nil || dp.Capacity == nil || pp.Capacity == dp.Capacity {
		t.Fatal("capacities not per role")
	}
	// A decode replica's request of 1000 prompt and 1 output token costs one
	// step of a full batch, no prefill: less than the prefill replica's.
	if a, b := dp.Capacity.RequestSeconds(1000, 1), pp.Capacity.RequestSeconds(1000, 1); !(a < b) {
		t.Errorf("decode RequestSeconds %v not below prefill's %v", a, b)
	}
}

// TestPairConfigErrors: a role missing, an unknown role, a role key at the
// target, keys a pair refuses, and a shared key's problem reported once at
// the target's own key. Positions counted by hand: a mapping's is its
// first key's colon (the decoder's convention), a scalar's its first
// character.
func TestPairConfigErrors(t *testing.T) {
	src := `targets:
  - name: chat
    scrape: [http://x:8000/metrics]
    replica: {gpu: h100-sxm, model: nosuchmodel}
    zero: {held: up}
    roles:
      prefil:
        maxReplicaCount: 2
      decode:
        metrics: [{type: demand, target: 0.8}]
`
	_, err := Parse([]byte(src), "pd.yaml")
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("err = %v", err)
	}
	got := err.Error()
	for _, w := range []string{
		"pd.yaml:3:13: targets[0].scrape: a P/D target (roles:) has scrape per role: move it under roles.prefill and roles.decode",
		"pd.yaml:4:37: targets[0].replica.model: ",
		"pd.yaml:5:11: targets[0].zero: scale to zero is for one pool",
		"pd.yaml:7:7: targets[0].roles.prefil: unknown key; allowed here: decode, prefill",
		"pd.yaml:10:16: targets[0].roles.decode.scrape: required in embedded mode",
		"pd.yaml:10:16: targets[0].roles.decode.maxReplicaCount: required",
	} {
		if !strings.Contains(got, w) {
			t.Errorf("missing %q in\n%s", w, got)
		}
	}
	if n := strings.Count(got, "targets[0].replica.model"); n != 1 {
		t.Errorf("replica.model reported %d times, want once:\n%s", n, got)
	}
	// prefil is prefill misspelled (did you mean prefill?): that is the
	// problem, not prefill missing too. A role named nothing like it
	// leaves prefill missing.
	if strings.Contains(got, "roles.prefill: required") {
		t.Errorf("prefill reported missing beside prefil's did you mean:\n%s", got)
	}
	_, err = Parse([]byte(strings.Replace(src, "prefil:", "warmup:", 1)), "pd.yaml")
	if w := "pd.yaml:7:13: targets[0].roles.prefill: required: a P/D target names both pools"; err == nil || !strings.Contains(err.Error(), w) {
		t.Errorf("missing %q in\n%v", w, err)
	}
}

// TestPairConfigSameSelector: a pair whose two roles select the same
// series (the same matchers in another order) is refused at the decode
// role's selector: line 10, its value after 8 spaces and "selector: " at
// column 19. Each pool was decided on the whole pair's signals, and
// --check-config said valid.
func TestPairConfigSameSelector(t *testing.T) {
	src := `prometheus: {url: "http://prom:9090"}
targets:
  - name: chat
    roles:
      prefill:
        selector: '{namespace="llm",pod=~"chat-.*"}'
        metrics: [{type: queue, target: 8}]
        maxReplicaCount: 4
      decode:
        selector: '{pod=~"chat-.*", namespace="llm"}'
        metrics: [{type: queue, target: 8}]
        maxReplicaCount: 4
`
	_, err := Parse([]byte(src), "pd.yaml")
	want := `pd.yaml:10:19: targets[0].roles.decode.selector: selects the same series as roles.prefill.selector ({namespace="llm",pod=~"chat-.*"})`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %q", err, want)
	}
	// Each role its own pods: valid.
	ok := strings.Replace(strings.Replace(src, `chat-.*"}'`, `chat-prefill-.*"}'`, 1), `'{pod=~"chat-.*",`, `'{pod=~"chat-decode-.*",`, 1)
	if _, err := Parse([]byte(ok), "pd.yaml"); err != nil {
		t.Errorf("own selectors: %v", err)
	}
}

// TestPairConfigEPPAndSharedPages: llm-d's P/D InferencePool selects both
// roles' pods (llm-d.ai/role only tells them apart inside the EPP), so the
// EPP's page is the whole pair's: server: epp on a pair is refused at the
// target's server (line 3, column 13 after "    server: "), and a URL in
// both roles' scrape lists at the decode role's entry (line 11: "        "
// + "scrape: [" puts the list's first URL at column 18). Both were valid
// before: each pool was decided on the other pool's load too.
func TestPairConfigEPPAndSharedPages(t *testing.T) {
	src := `targets:
  - name: chat
    server: epp
    roles:
      prefill:
        scrape: [http://chat-epp:9090/metrics]
        metrics: [{type: queue, target: 8}]
        maxReplicaCount: 4
      decode:
        metrics: [{type: queue, target: 8}]
        scrape: [http://chat-epp:9090/metrics]
        maxReplicaCount: 4
`
	_, err := Parse([]byte(src), "pd.yaml")
	for _, want := range []string{
		`pd.yaml:3:13: targets[0].server: server: epp reads the Endpoint Picker, whose page describes its whole InferencePool`,
		`pd.yaml:11:18: targets[0].roles.decode.scrape[0]: http://chat-epp:9090/metrics is in roles.prefill.scrape too`,
	} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want %q", err, want)
		}
	}
	// One page under two spellings (host case, a dot segment): the same
	// page, as within one list (it slipped through, compared as written).
	same := strings.Replace(strings.Replace(strings.Replace(src, "server: epp", "server: vllm", 1),
		"http://chat-epp:9090/metrics]", "http://p0:8000/metrics]", 1), "http://chat-epp:9090/metrics]", "http://P0:8000/./metrics]", 1)
	if _, err := Parse([]byte(same), "pd.yaml"); err == nil || !strings.Contains(err.Error(),
		`pd.yaml:11:18: targets[0].roles.decode.scrape[0]: http://P0:8000/./metrics is the same page as roles.prefill.scrape[0] http://p0:8000/metrics (both http://p0:8000/metrics once normalised`) {
		t.Errorf("one page, two spellings: %v", err)
	}
	// vLLM pages, one pool each: valid.
	ok := strings.Replace(strings.Replace(strings.Replace(src, "server: epp", "server: vllm", 1),
		"http://chat-epp:9090/metrics]", "http://p0:8000/metrics]", 1), "http://chat-epp:9090/metrics]", "http://d0:8000/metrics]", 1)
	if _, err := Parse([]byte(ok), "pd.yaml"); err != nil {
		t.Errorf("own pages: %v", err)
	}
}

// TestPairConfigSelectorCovers: a role whose selector's matchers are all
// among the other role's selects every series of the other pool too (its
// pool would count both): refused at the wider selector, line 6 or 10,
// its value at column 19 after 8 spaces and "selector: ". Two selectors
// that each hold a matcher the other lacks are valid.
func TestPairConfigSelectorCovers(t *testing.T) {
	src := `prometheus: {url: "http://prom:9090"}
targets:
  - name: chat
    roles:
      prefill:
        selector: '{namespace="llm"}'
        metrics: [{type: queue, target: 8}]
        maxReplicaCount: 4
      decode:
        selector: '{namespace="llm", llm_d_ai_role="decode"}'
        metrics: [{type: queue, target: 8}]
        maxReplicaCount: 4
`
	for _, c := range []struct{ src, want string }{
		{src, `pd.yaml:6:19: targets[0].roles.prefill.selector: selects every series that roles.decode.selector ({namespace="llm", llm_d_ai_role="decode"}) selects: the prefill pool would count the decode pods too`},
		{strings.Replace(strings.Replace(src, `'{namespace="llm"}'`, `'{namespace="llm", llm_d_ai_role="prefill"}'`, 1), `'{namespace="llm", llm_d_ai_role="decode"}'`, `'{namespace="llm"}'`, 1),
			`pd.yaml:10:19: targets[0].roles.decode.selector: selects every series that roles.prefill.selector ({namespace="llm", llm_d_ai_role="prefill"}) selects: the decode pool would count the prefill pods too`},
	} {
		if _, err := Parse([]byte(c.src), "pd.yaml"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("err = %v, want %q", err, c.want)
		}
	}
	ok := strings.Replace(src, `'{namespace="llm"}'`, `'{namespace="llm", llm_d_ai_role="prefill"}'`, 1)
	if _, err := Parse([]byte(ok), "pd.yaml"); err != nil {
		t.Errorf("each role its own label value: %v", err)
	}
}

// TestPairConfigInferencePoolRef: inferencePoolRef on a pair was taken as
// a shared key, and each role's missing scrape: was answered with "or name
// the InferencePool: inferencePoolRef: {name: chat}", the key already
// there. It is refused at its line (5, the mapping at column 21 after
// "  inferencePoolRef: "), and the roles' scrape: message no longer
// suggests it.
func TestPairConfigInferencePoolRef(t *testing.T) {
	src := `namespace: llm
targets:
- name: chat
  server: vllm
  inferencePoolRef: {name: chat}
  roles:
    prefill:
      scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat-prefill}
      metrics: [{type: queue, target: 4}]
      maxReplicaCount: 4
    decode:
      scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat-decode}
      metrics: [{type: queue, target: 4}]
      maxReplicaCount: 4
`
	_, err := Parse([]byte(src), "pd.yaml")
	want := "pd.yaml:5:21: targets[0].inferencePoolRef: a P/D target's pools are read from each role's own pods, and llm-d's InferencePool holds both roles' pods"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("err = %v, want %q", err, want)
	}
	if strings.Contains(err.Error(), "or name the InferencePool") {
		t.Errorf("a role's scrape: message suggests inferencePoolRef:\n%v", err)
	}
	// Each role's Deployment pods at its port: valid.
	ok := strings.ReplaceAll(strings.Replace(src, "  inferencePoolRef: {name: chat}\n", "", 1), "      metrics:", "      scrape: {port: 8000}\n      metrics:")
	if _, err := Parse([]byte(ok), "pd.yaml"); err != nil {
		t.Errorf("each role's scrape: {port}: %v", err)
	}
}

// TestPairConfigSameWorkload: two roles naming one Deployment (its keys in
// another order) were valid, each pool read from and scaling the same
// pods. Refused at the decode role's scaleTargetRef
// (line 12, the mapping at column 23 after 6 spaces and
// "scaleTargetRef: "). Two Deployments, or a Deployment and a
// StatefulSet of one name, are valid.
func TestPairConfigSameWorkload(t *testing.T) {
	src := `namespace: llm
targets:
- name: chat
  server: vllm
  roles:
    prefill:
      scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat}
      scrape: {port: 8000}
      metrics: [{type: queue, target: 4}]
      maxReplicaCount: 4
    decode:
      scaleTargetRef: {kind: Deployment, apiVersion: apps/v1, name: chat}
      scrape: {port: 8000}
      metrics: [{type: queue, target: 4}]
      maxReplicaCount: 4
`
	_, err := Parse([]byte(src), "pd.yaml")
	if want := "pd.yaml:12:23: targets[0].roles.decode.scaleTargetRef: names the same workload as roles.prefill.scaleTargetRef (Deployment chat)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %q", err, want)
	}
	for _, ok := range []string{
		strings.Replace(src, "kind: Deployment, apiVersion: apps/v1, name: chat}", "kind: Deployment, apiVersion: apps/v1, name: chat-decode}", 1),
		strings.Replace(src, "kind: Deployment, apiVersion: apps/v1, name: chat}", "kind: StatefulSet, apiVersion: apps/v1, name: chat}", 1),
	} {
		if ok == src {
			t.Fatal("replacement did not apply")
		}
		if _, err := Parse([]byte(ok), "pd.yaml"); err != nil {
			t.Errorf("two workloads: %v", err)
		}
	}
}

// TestPairConfigRoleMinZero: a role's minReplicaCount 0 is refused with
// what a pair allows (1 or more), not with the one-pool advice to add a
// zero: block, which a pair refuses too. Line 8, column 26: the value
// after 8 spaces and "minReplicaCount: ".
func TestPairConfigRoleMinZero(t *testing.T) {
	src := strings.Replace(pdGood, "        minReplicaCount: 2\n", "        minReplicaCount: 0\n", 1)
	src = strings.Replace(src, "        maxReplicaCount: 4\n", "        minReplicaCount: 0\n        maxReplicaCount: 4\n", 1)
	_, err := Parse([]byte(src), "pd.yaml")
	if err == nil {
		t.Fatal("minReplicaCount 0 on a role accepted")
	}
	got := err.Error()
	want := "pd.yaml:8:26: targets[0].roles.prefill.minReplicaCount: 0: a P/D pool runs at least 1 replica (zero: is refused on a pair: the pair has no held count to wake a pool at zero); use 1 or more"
	if !strings.Contains(got, want) || strings.Contains(got, "needs a zero: block") {
		t.Errorf("got\n%s\nwant %q and no zero: block advice", got, want)
	}
	if !strings.Contains(got, "targets[0].roles.decode.minReplicaCount: 0: a P/D pool runs at least 1 replica") {
		t.Errorf("decode's minReplicaCount 0 not reported:\n%s", got)
	}
}

// TestEmbeddedReplicasRefused: replicas: is a PromQL query, which embedded
// mode never runs; its presence alone turned off serve's reading of the
// current replicas as the last desired (SpecFollows), so pods that do not
// answer were no longer missing pods and a scale-down went through while
// they started. Refused at its value (line 4, column 15; the role's at line
// 7, column 19), on a target and on a P/D role.
func TestEmbeddedReplicasRefused(t *testing.T) {
	src := `targets:
  - name: chat
    scrape: [http://10.0.0.5:8000/metrics]
    replicas: 'kube_deployment_spec_replicas{deployment="chat"}'
    metrics: [{type: queue, target: 24}]
    maxReplicaCount: 8
`
	_, err := Parse([]byte(src), "emb.yaml")
	want := "emb.yaml:4:15: targets[0].replicas: is a PromQL query, read only with prometheus.url"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %q", err, want)
	}
	pd := strings.Replace(pdGood, "        scrape: [http://p0:8000/metrics]\n", "        scrape: [http://p0:8000/metrics]\n        replicas: 'up'\n", 1)
	_, err = Parse([]byte(pd), "pd.yaml")
	want = "pd.yaml:7:19: targets[0].roles.prefill.replicas: is a PromQL query, read only with prometheus.url"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("err = %v, want %q", err, want)
	}
}
