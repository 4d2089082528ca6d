package config

import (
	"errors"
	"strings"
	"testing"
)

// TestSameWorkload: two targets acting on one workload. Two writers
// (apply, pod_deletion_cost, in any mix) are refused at the second's
// writing key, naming the first target and its position; a second target
// that only reads the workload, or one whose selector holds the same
// matchers, loads with a warning naming the other.
func TestSameWorkload(t *testing.T) {
	const head = "namespace: llm\ntargets:\n"
	target := func(name, ref, extra string) string {
		return "- name: " + name + "\n" +
			"  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: " + ref + "}\n" +
			"  scrape: {port: 8000}\n" + extra +
			"  metrics: [{type: queue, target: 4}]\n  maxReplicaCount: 8\n"
	}
	refused := []struct{ name, doc, want string }{
		{"apply, pod_deletion_cost",
			head + target("a", "chat", "  apply: true\n") + target("b", "chat", "  pod_deletion_cost: true\n"),
			`w.yaml:12:22: targets[1].pod_deletion_cost: targets[0] "a" (w.yaml:6:10) writes the same workload, Deployment llm/chat`},
		{"pod_deletion_cost twice",
			head + target("a", "chat", "  pod_deletion_cost: true\n") + target("b", "chat", "  pod_deletion_cost: true\n"),
			`w.yaml:12:22: targets[1].pod_deletion_cost: targets[0] "a" (w.yaml:6:22) writes the same workload`},
		{"a reader between two writers",
			head + target("a", "chat", "  apply: true\n") + target("r", "chat", "") + target("b", "chat", "  apply: true\n"),
			`w.yaml:17:10: targets[2].apply: targets[0] "a" (w.yaml:6:10) writes the same workload`},
	}
	for _, c := range refused {
		_, err := Parse([]byte(c.doc), "w.yaml")
		var es Errors
		if !errors.As(err, &es) || len(es) != 1 || !strings.HasPrefix(es[0].Error(), c.want) {
			t.Errorf("%s: got %v\nwant one problem starting %s", c.name, err, c.want)
		}
	}
	warned := []struct{ name, doc, want string }{
		{"a writer, then a reader",
			head + target("a", "chat", "  apply: true\n") + target("r", "chat", ""),
			`w.yaml:10:19: targets[1].scaleTargetRef: names the same workload as targets[0] "a" (w.yaml:6:10), Deployment llm/chat, which writes it`},
		{"a reader, then a writer",
			head + target("r", "chat", "") + target("a", "chat", "  apply: true\n"),
			`w.yaml:9:19: targets[1].scaleTargetRef: targets[0] "r" (w.yaml:4:19) names the same workload, Deployment llm/chat, and does not write it`},
		{"two readers",
			head + target("r", "chat", "") + target("s", "chat", ""),
			`w.yaml:9:19: targets[1].scaleTargetRef: names the same workload as targets[0] "r" (w.yaml:4:19), Deployment llm/chat: both decisions are exported only`},
		// One workload and one selector: the workload's warning alone (it
		// says more), not a second one for the selector.
		{"one workload, one selector",
			"prometheus: {url: http://p:9090}\nnamespace: llm\ntargets:\n" +
				"- {name: a, apply: true, selector: '{pod=~\"chat-.*\"}', scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat}, metrics: [{type: queue, target: 4}], maxReplicaCount: 8}\n" +
				"- {name: b, selector: '{pod=~\"chat-.*\"}', scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat}, metrics: [{type: queue, target: 4}], maxReplicaCount: 8}\n",
			`w.yaml:5:59: targets[1].scaleTargetRef: names the same workload as targets[0] "a" (w.yaml:4:20), Deployment llm/chat, which writes it`},
		{"one selector, matchers in another order",
			"prometheus: {url: http://p:9090}\ntargets:\n" +
				"- {name: a, selector: '{namespace=\"llm\", pod=~\"chat-.*\"}', metrics: [{type: queue, target: 4}], maxReplicaCount: 8}\n" +
				"- {name: b, selector: '{pod=~\"chat-.*\", namespace=\"llm\"}', metrics: [{type: queue, target: 4}], maxReplicaCount: 8}\n",
			`w.yaml:4:23: targets[1].selector: selects the same series as targets[0] "a" (w.yaml:3:23)`},
	}
	for _, c := range warned {
		cfg, err := Parse([]byte(c.doc), "w.yaml")
		if err != nil {
			t.Errorf("%s: refused: %v", c.name, err)
			continue
		}
		if len(cfg.Warnings) != 1 || !strings.HasPrefix(cfg.Warnings[0].Error(), c.want) {
			t.Errorf("%s: warnings %v\nwant one starting %s", c.name, cfg.Warnings, c.want)
		}
	}
	// Other workloads, or the same name in another namespace or kind: no word.
	for _, doc := range []string{
		head + target("a", "chat", "  apply: true\n") + target("b", "code", "  apply: true\n"),
		head + target("a", "chat", "  apply: true\n") + strings.Replace(target("b", "chat", "  apply: true\n"), "  scrape:", "  namespace: batch\n  scrape:", 1),
		head + target("a", "chat", "  apply: true\n") + strings.Replace(target("b", "chat", ""), "Deployment", "StatefulSet", 1),
	} {
		if cfg, err := Parse([]byte(doc), "w.yaml"); err != nil || len(cfg.Warnings) != 0 {
			t.Errorf("distinct workloads: err %v, warnings %v\n%s", err, cfg.Warnings, doc)
		}
	}
}

// TestSamePage: two embedded targets whose scrape lists name one page
// (after RFC 3986 normalisation: a scheme and host in capitals, the
// default port, a dot segment) both read its pods, an EPP's page the same
// pool, and each may scale it: the second loads with a warning at its
// URL naming the first target and its position, as two targets on one
// selector are warned of. One workload: its warning alone. Other pages,
// or one target's own list (refused there): no such word.
func TestSamePage(t *testing.T) {
	target := func(name, urls, extra string) string {
		return "- name: " + name + "\n  server: epp\n  scrape: [" + urls + "]\n" + extra +
			"  metrics: [{type: queue, target: 4}]\n  maxReplicaCount: 8\n"
	}
	warned := []struct{ name, doc, want string }{
		{"one URL",
			"targets:\n" + target("a", "http://chat-epp.llm:9090/metrics", "") + target("b", "http://chat-epp.llm:9090/metrics", ""),
			`w.yaml:9:12: targets[1].scrape[0]: "http://chat-epp.llm:9090/metrics" reads the same page as targets[0] "a" (w.yaml:4:12; both http://chat-epp.llm:9090/metrics)`},
		{"one page, spelt otherwise",
			"targets:\n" + target("a", "http://x.llm:9090/metrics, http://chat-epp.llm/metrics", "") + target("b", "HTTP://Chat-EPP.llm:80/a/../metrics", ""),
			`w.yaml:9:12: targets[1].scrape[0]: "HTTP://Chat-EPP.llm:80/a/../metrics" reads the same page as targets[0] "a" (w.yaml:4:39; both http://chat-epp.llm/metrics)`},
		// A port-forwarded EPP named by its loopback address in one target
		// and by localhost in another: it was not warned of.
		{"one loopback page",
			"targets:\n" + target("a", "http://localhost:9090/metrics", "") + target("b", "http://127.0.0.1:9090/metrics", ""),
			`w.yaml:9:12: targets[1].scrape[0]: "http://127.0.0.1:9090/metrics" reads the same page as targets[0] "a" (w.yaml:4:12; both http://localhost:9090/metrics)`},
	}
	for _, c := range warned {
		cfg, err := Parse([]byte(c.doc), "w.yaml")
		if err != nil {
			t.Errorf("%s: refused: %v", c.name, err)
			continue
		}
		if len(cfg.Warnings) != 1 || !strings.HasPrefix(cfg.Warnings[0].Error(), c.want) {
			t.Errorf("%s: warnings %v\nwant one starting %s", c.name, cfg.Warnings, c.want)
		}
	}
	ref := "  namespace: llm\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat}\n"
	cfg, err := Parse([]byte("targets:\n"+target("a", "http://e:9090/metrics", ref)+target("b", "http://e:9090/metrics", ref)), "w.yaml")
	if err != nil || len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0].Error(), "names the same workload") {
		t.Errorf("one workload: err %v, warnings %v; want the workload's warning alone", err, cfg.Warnings)
	}
	cfg, err = Parse([]byte("targets:\n"+target("a", "http://e:9090/metrics", "")+target("b", "http://f:9090/metrics", "")), "w.yaml")
	if err != nil || len(cfg.Warnings) != 0 {
		t.Errorf("two pages: err %v, warnings %v", err, cfg.Warnings)
	}
	// Another loopback address, an empty path (the reader fetches "/"),
	// a trailing slash: other pages, no same-page warning (the empty path
	// has its own: noPath, TestScrapeURLNoPath).
	for _, b := range []string{"http://127.0.0.2:9090/metrics", "http://localhost:9090", "http://localhost:9090/metrics/"} {
		cfg, err = Parse([]byte("targets:\n"+target("a", "http://localhost:9090/metrics", "")+target("b", b, "")), "w.yaml")
		var others []error
		for _, w := range cfg.Warnings {
			if !strings.Contains(w.Error(), "has no path") {
				others = append(others, w)
			}
		}
		if err != nil || len(others) != 0 {
			t.Errorf("%s: err %v, warnings %v; want none", b, err, others)
		}
	}
	// In one list: warned (refused only when certain).
	cfg, err = Parse([]byte("targets:\n"+target("a", "http://localhost:9090/metrics, 'http://[::1]:9090/metrics'", "")), "w.yaml")
	want := `targets[0].scrape[1]: "http://[::1]:9090/metrics" and scrape[0] "http://localhost:9090/metrics" are both loopback at one port (http://localhost:9090/metrics)`
	if err != nil {
		t.Fatalf("one list: %v", err)
	}
	if len(cfg.Warnings) != 1 || !strings.Contains(cfg.Warnings[0].Error(), want) {
		t.Errorf("one list: warnings %v; want one with %s", cfg.Warnings, want)
	}
}

// TestScrapeURLNoPath: a scrape URL written as a Prometheus target is
// (http://chat-epp.llm.svc:9090, metrics_path implied) passed
// serve --check-config and answered 404 at every cycle: serve adds no
// path. It is now warned of at its position with the URL to write, in a
// target's list, a pair role's and zero.held_scrape; a path of its own
// (/stats) or a query is not.
func TestScrapeURLNoPath(t *testing.T) {
	cfg, err := Parse([]byte(`targets:
- name: chat
  server: epp
  scrape: [http://chat-epp.llm.svc:9090, http://chat-epp-2.llm.svc:9090/, http://a:9090/stats, 'http://b:9090/?x=1']
  metrics: [{type: queue, target: 24}]
  minReplicaCount: 0
  maxReplicaCount: 8
  zero: {flow_control: true}
- name: solo
  scrape: [http://10.0.0.5:8000/metrics]
  metrics: [{type: queue, target: 24}]
  minReplicaCount: 0
  maxReplicaCount: 8
  zero: {held_scrape: 'http://activator:9090'}
- name: pair
  roles:
    prefill: {scrape: ['http://10.0.0.6:8000'], metrics: [{type: running, target: 2}], maxReplicaCount: 4}
    decode: {scrape: ['http://10.0.0.7:8000/metrics'], metrics: [{type: running, target: 4}], maxReplicaCount: 4}
`), "nopath.yaml")
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		`nopath.yaml:4:12: targets[0].scrape[0]: "http://chat-epp.llm.svc:9090" has no path, and serve fetches it as written (no metrics_path is added): model servers and llm-d's EPP serve their page at /metrics only (404 here); write "http://chat-epp.llm.svc:9090/metrics" (target "chat")`,
		`targets[0].scrape[1]: "http://chat-epp-2.llm.svc:9090/" has no path`,
		`targets[1].zero.held_scrape: "http://activator:9090" has no path`,
		`targets[2].roles.prefill.scrape[0]: "http://10.0.0.6:8000" has no path`,
	}
	var got []string
	for _, w := range cfg.Warnings {
		got = append(got, w.Error())
	}
	if len(got) != len(want) {
		t.Fatalf("warnings:\n%s\nwant %d", strings.Join(got, "\n"), len(want))
	}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Errorf("warning %d = %s\nwant it to contain %s", i, got[i], w)
		}
	}
}
