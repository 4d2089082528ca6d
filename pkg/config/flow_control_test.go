package config

import (
	"strings"
	"testing"
)

// TestFlowControl: zero.flow_control (the llm-d EPP's flow-control queue
// as the held count) is accepted with server: epp in either mode, with no
// held: or held_scrape:; refused for another server, beside held or
// held_scrape, and each error names the key and what to do.
func TestFlowControl(t *testing.T) {
	const embedded = "targets:\n- name: chat\n  server: %s\n  scrape: [http://127.0.0.1:9090/metrics]\n  metrics: [{type: queue, target: 8}]\n  minReplicaCount: 0\n  maxReplicaCount: 4\n  zero: {%s}\n"
	const prom = "prometheus: {url: http://127.0.0.1:9091}\ntargets:\n- name: chat\n  server: epp\n  selector: '{namespace=\"llm\", service=\"chat-epp\"}'\n  metrics: [{type: queue, target: 8}]\n  minReplicaCount: 0\n  maxReplicaCount: 4\n  zero: {flow_control: true}\n"
	for _, ok := range []string{fmt2(embedded, "epp", "flow_control: true"), prom} {
		f, err := Parse([]byte(ok), "ok.yaml")
		if err != nil {
			t.Fatalf("%s: %v", ok, err)
		}
		if z := f.Targets[0].Zero; z == nil || !z.FlowControl || z.Held != "" {
			t.Errorf("zero %+v, want flow_control and no held query", z)
		}
	}
	for _, tc := range []struct{ cfg, want string }{
		{fmt2(embedded, "vllm", "flow_control: true"), "ok.yaml:8:24: targets[0].zero.flow_control: reads the held count from the llm-d EPP's flow-control queue: it needs server: epp"},
		{fmt2(embedded, "epp", "flow_control: true, held_scrape: 'http://127.0.0.1:8080/metrics'"), "targets[0].zero: flow_control (the EPP's queue), held and held_scrape are exclusive"},
		{fmt2(embedded, "epp", "cooldownPeriod: 60s"), "or with server: epp flow_control: true"},
		// min 0 without a zero: block on an EPP target names the EPP's
		// holder; "(held:)" alone sent an llm-d user to an activator.
		{strings.Replace(fmt2(embedded, "epp", ""), "  zero: {}\n", "", 1), "ok.yaml:6:20: targets[0].minReplicaCount: 0 needs a zero: block naming what holds the first request: with server: epp, zero: {flow_control: true}"},
		{"targets:\n- name: chat\n  server: epp\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat}\n  scrape: {port: 9090}\n  metrics: [{type: queue, target: 8}]\n  maxReplicaCount: 4\n",
			"targets[0].scrape: server: epp reads the pool from its Endpoint Picker's page, not from the model-server pods"},
	} {
		_, err := Parse([]byte(tc.cfg), "ok.yaml")
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.cfg, err, tc.want)
		}
	}
}

func fmt2(tmpl, server, zero string) string {
	return strings.Replace(strings.Replace(tmpl, "%s", server, 1), "%s", zero, 1)
}
