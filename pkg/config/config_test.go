package config

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/parser"
	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/pkg/recommend"

	"github.com/infscale/infscale/pkg/modelserver"
	"github.com/infscale/infscale/pkg/replica"
)

// TestBadFiles checks that every problem in each testdata/*.bad.yaml is
// reported at once, with file:line:col and the key (rulefmt-style fixtures).
// Positions are counted by hand in the fixture files.
func TestBadFiles(t *testing.T) {
	want := map[string][]string{
		"mixed.bad.yaml": {
			"mixed.bad.yaml:3:3: prometheus.timout: unknown key; allowed here: authorization, basic_auth",
			"mixed.bad.yaml:4:11: interval: not a valid duration string: \"fast\"; expected a duration",
			"mixed.bad.yaml:7:11: targets[0].server: unknown server \"vlm\" (allowed: auto, vllm,",
			"mixed.bad.yaml:8:13: targets[0].selector: not a PromQL label-matcher set",
			"mixed.bad.yaml:10:12: targets[0].metrics[0].type: unknown signal \"qeue\" (allowed: queue, waiting, running, kv, cpu, ttft",
			"mixed.bad.yaml:11:28: targets[0].metrics[1].quantile: must be in (0, 1)",
			"mixed.bad.yaml:11:52: targets[0].metrics[1].query: invalid PromQL: at 1:58 of the query: unclosed left parenthesis",
			"mixed.bad.yaml:12:8: targets[0].min: 3 must be <= max 2",
			"mixed.bad.yaml:16:35: targets[0].behavior.scaleDown.stabilizationWindowSeconds: 7200 must be in 0..3600",
			"mixed.bad.yaml:18:16: targets[0].behavior.scaleDown.policies[0].type: \"Pod\" (allowed: Pods, Percent)",
			"mixed.bad.yaml:18:28: targets[0].behavior.scaleDown.policies[0].value: 0 must be >= 1",
			"mixed.bad.yaml:19:21: targets[0].behavior.scaleDown.selectPolicy: \"Maximum\" (allowed: Max, Min, Disabled)",
			"mixed.bad.yaml:20:3: targets[0].lookahed: unknown key; allowed here: apply, behavior, guard, hold, inferencePoolRef, lookahead, maxReplicaCount, metrics, minReplicaCount,",
		},
		"types.bad.yaml": {
			"types.bad.yaml:2:6: prometheus: at most one of basic_auth password, password_file",
			"types.bad.yaml:2:8: prometheus.url: must be an http:// or https:// URL with a host, got \"ftp://prometheus:9090\"",
			"types.bad.yaml:3:16: prometheus.tls_config: unknown field \"ca_fil\"",
			"types.bad.yaml:5:11: interval: 0.5s: a duration takes no fractions: write 500ms",
			"types.bad.yaml:6:9: listen: 9105 is a port alone: write 0.0.0.0:9105",
			"types.bad.yaml:8:7: targets[0].selector: required with prometheus.url",
			"types.bad.yaml:8:9: targets[0].name: \"chat bot\": allowed are letters, digits",
			"types.bad.yaml:9:8: targets[0].max: expected an integer, got the string \"eight\"",
			"types.bad.yaml:10:12: targets[0].metrics: expected a list, got a mapping",
			"types.bad.yaml:11:7: targets[1].selector: required with prometheus.url",
			"types.bad.yaml:12:11: targets[1].scrape: expected a list",
			"types.bad.yaml:13:8: targets[1].min: -1 must be >= 0",
			"types.bad.yaml:16:24: targets[1].metrics[0].target: 80 (8000%) must be in (0, 1] (fraction of the KV cache)",
			"types.bad.yaml:17:27: targets[1].metrics[1].target: queue target is a number (requests per replica), not a duration",
			"types.bad.yaml:18:39: targets[1].metrics[2].quantile: applies to ttft and queuewait only",
			"types.bad.yaml:18:52: targets[1].metrics[2].window: applies to ttft and queuewait only (cpu uses a fixed 2m rate window, demand 1m)",
			"types.bad.yaml:20:5: targets[1].schedule[0].duration: 0s must be > 0",
			"types.bad.yaml:20:12: targets[1].schedule[0].cron: \"0 25 * * *\": end of range (25) above maximum (23)",
			"types.bad.yaml:20:31: targets[1].schedule[0].min: 9 must be in 0..max (4)",
			"types.bad.yaml:20:44: targets[1].schedule[0].timezone: \"Mars/Olympus\" is not an IANA time zone",
		},
		// A signal twice names the first entry by its key and position
		// (it said "also metrics[0]" alone): line 7 "  - {type: " is 11
		// characters, the first entry's "{" on line 6 at column 5.
		"signaltwice.bad.yaml": {
			"signaltwice.bad.yaml:7:12: targets[0].metrics[1].type: queue is listed twice (also metrics[0] at 6:5); one entry per signal (target \"chat\")",
		},
		"zero.bad.yaml": {
			"zero.bad.yaml:3:59: targets[0].metrics[0].type: kv cannot scale from zero with min 0",
			"zero.bad.yaml:3:83: targets[0].min: 0 needs a zero: block",
			"zero.bad.yaml:4:10: targets[1].name: duplicate target name \"chat\" (also targets[0])",
			"zero.bad.yaml:4:85: targets[1].min: 0 needs a zero: block",
			"zero.bad.yaml:10:9: targets[2].zero.held: required",
			"zero.bad.yaml:10:9: targets[2].zero: scale to zero needs min 0 (min is 2)",
			"zero.bad.yaml:12:13: targets[3].selector: not a PromQL label-matcher set such as '{namespace=\"llm\", pod=~\"chat-.*\"}': invalid PromQL: selector `{__name__=\"up\"}` names a metric",
			"zero.bad.yaml:13:46: targets[3].metrics[0].query: queue is running + waiting",
			// Line 20: "  zero: {cooldownPeriod: 60s, held: 'sum(h)', " is 46
			// characters. KEDA's activationThreshold, written where a
			// KEDA user would: refused, saying what infscale does instead.
			`zero.bad.yaml:20:47: targets[4].zero.activationThreshold: unknown key; allowed here: cooldownPeriod, flow_control, held, held_scrape; infscale has no activation threshold: any held request activates one replica (KEDA's activationThreshold belongs in the ScaledObject's trigger, "0" there, docs/keda.md)`,
		},
		// Columns counted by hand: line 6 "  metrics: [{type: ttft, target: 2s, quantile: " is 47
		// characters; line 12 "      policies: [{type: Pods, value: " 37, then "1.5, periodSeconds: " 20.
		// Line 4: "prometheus: {url: http://127.0.0.1:9090, timeout: " is 50 characters.
		"zeros.bad.yaml": {
			"zeros.bad.yaml:3:11: interval: must be more than 0 (the decision period, 1s to 1h; leave the key out for the default 15s)",
			"zeros.bad.yaml:4:51: prometheus.timeout: must be more than 0 (leave the key out for the default 10s)",
		},
		"numbers.bad.yaml": {
			"numbers.bad.yaml:6:48: targets[0].metrics[0].quantile: must be in (0, 1), e.g. 0.95, got NaN",
			"numbers.bad.yaml:7:8: targets[0].min: expected an integer, got 1.5",
			"numbers.bad.yaml:8:8: targets[0].max: expected an integer, got the string \"4\"",
			"numbers.bad.yaml:11:35: targets[0].behavior.scaleUp.stabilizationWindowSeconds: expected an integer, got 30.5",
			"numbers.bad.yaml:12:38: targets[0].behavior.scaleUp.policies[0].value: expected an integer, got 1.5",
			"numbers.bad.yaml:12:58: targets[0].behavior.scaleUp.policies[0].periodSeconds: expected an integer, got the string \"15\"",
			// Line 13: "    scaleDown: {stabilizationWindowSeconds: " is 44 characters.
			"numbers.bad.yaml:13:45: targets[0].behavior.scaleDown.stabilizationWindowSeconds: 99999999999999999999 is out of range; expected an integer",
			"numbers.bad.yaml:14:53: targets[0].schedule[0].min: expected an integer, got 2.0",
		},
		// Columns: line 9 "  metrics: [{type: queue, target: " is 34 characters; line 22
		// "  behavior: {scaleDown: {tolerance: " 36; line 24 "  - {cron: " 11.
		"followon.bad.yaml": {
			"followon.bad.yaml:9:35: targets[0].metrics[0].target: invalid value \"0x18\"; expected a number, a percentage such as 80% (kv, demand, cpu) or a duration such as 2s (ttft, queuewait)",
			"followon.bad.yaml:14:8: targets[1].min: expected an integer, got the string \"x\"",
			"followon.bad.yaml:15:8: targets[1].max: expected an integer, got the string \"eight\"",
			"followon.bad.yaml:20:8: targets[2].max: 9999999999 must be <= 2147483647 (max int32, as the HPA)",
			"followon.bad.yaml:21:14: targets[2].lookahead: not a valid duration string: \"fast\"",
			"followon.bad.yaml:22:37: targets[2].behavior.scaleDown.tolerance: 1 must be < 1 (a band reaching ratio 0 never scales down)",
			"followon.bad.yaml:24:12: targets[2].schedule[0].cron: \"@every 1h\": @every is relative to the start",
			"followon.bad.yaml:25:12: targets[2].schedule[1].cron: \"0 0 30 2 *\" never fires",
		},
		// A NUL byte after "  max: 4" (8 characters): refused there, not echoed back.
		"binary.bad.yaml": {
			"binary.bad.yaml:3:9: not a YAML text file (a NUL byte or invalid UTF-8 here)",
		},
		// Every key given twice, by its path and both positions (goccy's
		// parser named the first alone, "mapping key "url" already defined
		// at [2:3]", with no path). Line 7: "  metrics: [{type: queue,
		// target: 24, " is 38 characters, the first target at 27; line 17:
		// "      - {type: Pods, " is 21, value at 22, the second at 51.
		"twice.bad.yaml": {
			"twice.bad.yaml:3:3: prometheus.url: key given twice (first at 2:3); give it once",
			"twice.bad.yaml:7:39: targets[0].metrics[0].target: key given twice (first at 7:27); give it once (target \"chat\")",
			"twice.bad.yaml:9:3: targets[0].maxReplicaCount: key given twice (first at 8:3); give it once (target \"chat\")",
			"twice.bad.yaml:17:51: targets[1].behavior.scaleDown.policies[0].value: key given twice (first at 17:22); give it once (target \"batch\")",
		},
		"tab.bad.yaml": {
			"tab.bad.yaml:3:1: found character '\\t' that cannot start any token (YAML indents with spaces, not tabs)",
		},
		// A UTF-8 byte order mark is skipped: the first key is prometheus (it
		// was "\ufeffprometheus: unknown key"); only the real problem is left.
		"bom.bad.yaml": {
			"bom.bad.yaml:2:10: targets: at least one target is required",
		},
		// The password is not echoed (url.URL.Redacted). Line 8: "  scrape: [http://10.0.0.5:8000/metrics, "
		// is 41 characters.
		"addresses.bad.yaml": {
			"addresses.bad.yaml:3:8: prometheus.url: \"http://admin:xxxxx@prometheus:9090/api/v1?dedup=true\": no query, fragment or user:password",
			"addresses.bad.yaml:4:9: listen: port \"99999\": allowed a port number 0..65535",
			// Line 8 "  scrape: [" is 10 characters: scrape: beside prometheus.url is read by nobody.
			"addresses.bad.yaml:8:11: targets[0].scrape: is for embedded mode; with prometheus.url the target is read from Prometheus",
			"addresses.bad.yaml:8:42: targets[0].scrape[1]: \"http://10.0.0.5:8000/metrics\" listed twice (also scrape[0]); one URL per replica",
		},
		// Line 4: "  scrape: [http://vllm-0:8000/metrics, " is 39 characters, then
		// "HTTP://VLLM-0:8000/metrics, " 28 and "\"http://vllm-1/metrics\", " 25:
		// scheme and host case and the default port do not make another page.
		"sameurl.bad.yaml": {
			"sameurl.bad.yaml:4:40: targets[0].scrape[1]: \"HTTP://VLLM-0:8000/metrics\" is the same page as scrape[0] \"http://vllm-0:8000/metrics\"",
			"sameurl.bad.yaml:4:93: targets[0].scrape[3]: \"http://vllm-1:80/metrics#x\" is the same page as scrape[2] \"http://vllm-1/metrics\"",
			// Issue 23 item 7: line 8 `  scrape: ["http://r:8000/r1", ` is 31
			// characters; `"http://r:8000/./r1", ` 22 and
			// `"http://[::ffff:10.0.0.1]/m", ` 30 more: a dot segment and
			// an IPv4-mapped IPv6 host (with a trailing dot beside it) do
			// not make another page either.
			"sameurl.bad.yaml:8:32: targets[1].scrape[1]: \"http://r:8000/./r1\" is the same page as scrape[0] \"http://r:8000/r1\" (both http://r:8000/r1 once normalised",
			"sameurl.bad.yaml:8:84: targets[1].scrape[3]: \"http://10.0.0.1./m\" is the same page as scrape[2] \"http://[::ffff:10.0.0.1]/m\" (both http://10.0.0.1/m once normalised",
		},
		// Line 5: "- {name: chat, scrape: [" is 24 characters.
		"flow.bad.yaml": {
			"flow.bad.yaml:5:25: targets[0].scrape[0]: expected a string, got a mapping; quote a value that holds ': ', '{' or '['",
		},
		// Line 9: "  behavior: {scaleUp: {tolerance: " is 34 characters; line 11 "  - {cron: " 11;
		// line 12 "  - {cron: \"0 8 * * *\", duration: 1h, min: 2, timezone: " 56.
		"schedule.bad.yaml": {
			"schedule.bad.yaml:9:35: targets[0].behavior.scaleUp.tolerance: not a quantity: the string \"ten\"; expected a Kubernetes quantity such as 0.1 or 100m",
			"schedule.bad.yaml:11:12: targets[0].schedule[0].cron: \"CRON_TZ=Asia/Tokyo 0 8 * * *\": give the zone as the window's time zone, not as a CRON_TZ=/TZ= prefix",
			"schedule.bad.yaml:12:57: targets[0].schedule[1].timezone: \"Local\" is the machine's zone",
		},
		// Line 7: "  - {type: queue, target: 24, window: " is 38 characters; line 8
		// "  - {type: ttft, target: 2s, window: " 37.
		"window.bad.yaml": {
			"window.bad.yaml:8:39: targets[0].metrics[0].window: applies to ttft and queuewait only",
			"window.bad.yaml:9:38: targets[0].metrics[1].window: must be at least 1m",
			// "  - {type: queuewait, target: 400ms, window: " is 45 characters.
			"window.bad.yaml:10:46: targets[0].metrics[2].window: must be at most 1h (a quantile over a longer window answers a load change long after it could be scaled on; embedded mode keeps every scrape's histogram within it), got 1000d",
		},
		// Line 5 "  metrics: [{type: " is 19 characters; line 9 "  metrics:
		// [{type: demand, target: 0.8, query: " 47; line 10 "  replica:
		// {gpu: " 17 and "  replica: {gpu: h101, model: llama-3-8b, tp: " 46.
		"demand.bad.yaml": {
			"demand.bad.yaml:5:20: targets[0].metrics[0].type: demand needs the target's replica model: add replica: {gpu: h100-sxm, model: llama-3-8b}",
			"demand.bad.yaml:9:48: targets[1].metrics[0].query: query overrides need prometheus.url",
			"demand.bad.yaml:9:48: targets[1].metrics[0].query: demand reads three rates",
			"demand.bad.yaml:10:18: targets[1].replica.gpu: unknown GPU \"h101\"",
			"demand.bad.yaml:10:47: targets[1].replica.tp: must be >= 1",
		},
		"syntax.bad.yaml": {
			"syntax.bad.yaml:4:3: ',' or ']' must be specified",
		},
		// A key indented deeper than its siblings (line 3, three spaces)
		// is named by goccy at the value above it, line 2's "chat" at
		// column 9; one indented less than them (line 4, one space) at
		// itself, column 2. Each says what to look for.
		"deeper.bad.yaml": {
			"deeper.bad.yaml:2:9: mapping value is not allowed in this context (quote a value that holds ': '; or a line below it is indented deeper than the keys beside it)",
		},
		"shallower.bad.yaml": {
			"shallower.bad.yaml:4:2: value is not allowed in this context (indentation: a key lines up with the keys beside it)",
		},
		"empty.bad.yaml": {
			"empty.bad.yaml: empty configuration",
		},
		// scaleTargetRef, namespace, apply and the pod form of scrape.
		"kube.bad.yaml": {
			`kube.bad.yaml:1:12: namespace: "LLM": a namespace name is lowercase letters, digits and '-'`,
			`kube.bad.yaml:4:19: targets[0].scaleTargetRef.name: required`,
			`kube.bad.yaml:5:14: targets[0].namespace: "llm_prod": a namespace name is lowercase`,
			`kube.bad.yaml:6:13: targets[0].replicas: scaleTargetRef gives the current replicas`,
			`kube.bad.yaml:7:18: targets[0].scrape.port: 70000: a port is 1..65535`,
			`kube.bad.yaml:7:31: targets[0].scrape.path: "metrics": a path starts with /`,
			`kube.bad.yaml:12:14: targets[1].namespace: applies to a target with scaleTargetRef`,
			`kube.bad.yaml:13:10: targets[1].apply: applies to a target with scaleTargetRef`,
			`kube.bad.yaml:14:11: targets[1].scrape: the {port, path} form scrapes the Ready pods of scaleTargetRef`,
			`kube.bad.yaml:18:32: targets[2].scaleTargetRef.apiVersion: "argoproj.io/": want group/version`,
			`kube.bad.yaml:18:73: targets[2].scaleTargetRef.replicas: unknown key; allowed here: apiVersion, kind, name`,
			`kube.bad.yaml:19:18: targets[2].scrape.port: "http metrics": not a container port name`,
			`kube.bad.yaml:23:19: targets[3].scaleTargetRef.apiVersion: required`,
			`kube.bad.yaml:25:11: targets[3].scrape: expected a list of /metrics URLs, or with scaleTargetRef a mapping`,
			`kube.bad.yaml:40:10: targets[5].apply: targets[4] "twice" (testdata/kube.bad.yaml:33:10) writes the same workload, Deployment llm/chat: two writers`,
		},
		"pool.bad.yaml": {
			`pool.bad.yaml:4:21: targets[0].inferencePoolRef: needs scaleTargetRef: the workload behind the pool`,
			`pool.bad.yaml:9:21: targets[1].inferencePoolRef.name: required: the InferencePool's name`,
			`pool.bad.yaml:9:22: targets[1].inferencePoolRef.namespace: unknown key; allowed here: name`,
			`pool.bad.yaml:14:28: targets[2].inferencePoolRef.name: "Chat_Pool": not a Kubernetes object name`,
			`pool.bad.yaml:15:11: targets[2].scrape: with inferencePoolRef the pool gives the pages`,
			`pool.bad.yaml:22:22: targets[3].pod_deletion_cost: reads each model-server pod's running + waiting from its own page; with server: epp`,
		},
	}
	files, _ := filepath.Glob("testdata/*.bad.yaml")
	if len(files) != len(want) {
		t.Errorf("testdata has %d bad files, the table %d: add expectations for new fixtures", len(files), len(want))
	}
	for name, msgs := range want {
		t.Run(name, func(t *testing.T) {
			cfg, err := Load(filepath.Join("testdata", name))
			if cfg != nil || err == nil {
				t.Fatalf("Load accepted a bad file")
			}
			var es Errors
			if !errors.As(err, &es) {
				t.Fatalf("error is %T, want Errors: %v", err, err)
			}
			if len(es) != len(msgs) {
				t.Errorf("got %d problems, want %d:\n%v", len(es), len(msgs), err)
			}
			for i, m := range msgs {
				if i < len(es) && !strings.HasPrefix(es[i].Error(), "testdata/"+m) {
					t.Errorf("problem %d:\n got %s\nwant prefix testdata/%s", i, es[i].Error(), m)
				}
			}
		})
	}
}

// TestDefaults checks that absent keys take the documented defaults.
func TestDefaults(t *testing.T) {
	cfg, err := Parse([]byte(`
targets:
- name: chat
  scrape: [http://127.0.0.1:8000/metrics]
  metrics: [{type: queue, target: 24}, {type: ttft, target: 2}]
  max: 4
`), "inline.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if got := time.Duration(cfg.Interval); got != 15*time.Second {
		t.Errorf("interval %v, want 15s", got)
	}
	if got := time.Duration(cfg.Prometheus.Timeout); got != 10*time.Second {
		t.Errorf("timeout %v, want 10s", got)
	}
	if cfg.Listen != "0.0.0.0:9105" {
		t.Errorf("listen %q", cfg.Listen)
	}
	tg := cfg.Targets[0]
	if tg.Server != modelserver.VLLM || *tg.Min != 1 {
		t.Errorf("server %q min %d, want vllm 1", tg.Server, *tg.Min)
	}
	ttft := tg.Metrics[1]
	if ttft.Quantile != 0.95 || time.Duration(ttft.Window) != 3*time.Minute || ttft.Target.Value != 2 {
		t.Errorf("ttft defaults %+v, want quantile 0.95 window 3m target 2 s", ttft)
	}
	if !cfg.Prometheus.Embedded() {
		t.Error("no prometheus.url must mean embedded mode")
	}
}

// TestQuantity checks targets given as numbers and as durations.
func TestQuantity(t *testing.T) {
	for in, want := range map[string]float64{"24": 24, "0.8": 0.8, "2s": 2, "500ms": 0.5, "'1m'": 60} {
		var q Quantity
		if err := q.UnmarshalYAML([]byte(in)); err != nil || q.Value != want {
			t.Errorf("%s: got %v %v, want %v", in, q.Value, err, want)
		}
	}
	for _, in := range []string{"fast", ".nan", "NaN", "Inf"} {
		var q Quantity
		if err := q.UnmarshalYAML([]byte(in)); err == nil {
			t.Errorf("%s accepted as %v", in, q.Value)
		}
	}
}

// TestShippedConfigs loads every configuration shipped in the repository
// through the real loader: examples/*.yaml and every infscale config embedded
// in a ConfigMap under deploy/ (a data key ending in .yaml holding `targets:`).
func TestShippedConfigs(t *testing.T) {
	root := filepath.Join("..", "..")
	examples, _ := filepath.Glob(filepath.Join(root, "examples", "*.yaml"))
	if len(examples) == 0 {
		t.Fatal("no example configs under examples/")
	}
	for _, p := range examples {
		if f, err := Load(p); err != nil {
			t.Errorf("%s:\n%v", p, err)
		} else if len(f.Deprecations) > 0 {
			t.Errorf("%s uses deprecated keys:\n%v", p, Errors(f.Deprecations))
		}
	}
	_ = filepath.WalkDir(filepath.Join(root, "deploy"), func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || (!strings.HasSuffix(p, ".yaml") && !strings.HasSuffix(p, ".yml")) {
			return nil
		}
		for key, body := range configMapConfigs(t, p) {
			if f, err := Parse([]byte(body), p+"#"+key); err != nil {
				t.Errorf("%s data %s:\n%v", p, key, err)
			} else if len(f.Deprecations) > 0 {
				t.Errorf("%s data %s uses deprecated keys:\n%v", p, key, Errors(f.Deprecations))
			}
		}
		return nil
	})
}

// configMapConfigs returns the infscale configs found in ConfigMaps of a
// (multi-document) manifest file, by data key.
func configMapConfigs(t *testing.T, path string) map[string]string {
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := parser.ParseBytes(data, 0)
	if err != nil {
		return nil // not ours to judge; kubeconform-style checks live elsewhere
	}
	out := map[string]string{}
	for _, doc := range f.Docs {
		if doc.Body == nil {
			continue
		}
		var cm struct {
			Kind string            `yaml:"kind"`
			Data map[string]string `yaml:"data"`
		}
		if yaml.NodeToValue(doc.Body, &cm) != nil || cm.Kind != "ConfigMap" {
			continue
		}
		for k, v := range cm.Data {
			if (strings.HasSuffix(k, ".yaml") || strings.HasSuffix(k, ".yml")) && strings.Contains(v, "targets:") {
				out[k] = v
			}
		}
	}
	return out
}

// TestPolicy checks the conversion of the shipped Prometheus example's first
// target: values read off examples/serve-prometheus.yaml by hand.
func TestPolicy(t *testing.T) {
	cfg, err := Load("../../examples/serve-prometheus.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := cfg.Targets[0].Policy()
	if err != nil {
		t.Fatal(err)
	}
	if p.Min != 1 || p.Max != 8 || p.Lookahead != 90*time.Second {
		t.Errorf("min %d max %d lookahead %v, want 1 8 90s", p.Min, p.Max, p.Lookahead)
	}
	if len(p.Metrics) != 2 || p.Metrics[0].Signal.String() != "queue" || p.Metrics[0].Target != 24 ||
		p.Metrics[1].Signal.String() != "ttft" || p.Metrics[1].Target != 2 {
		t.Errorf("metrics %+v, want queue 24 and ttft 2 s", p.Metrics)
	}
	if w := p.Behavior.ScaleDown.StabilizationWindowSeconds; w == nil || *w != 300 {
		t.Errorf("scaleDown window %v, want 300", w)
	}
	if len(p.Schedule) != 1 || p.Schedule[0].Min != 4 || p.Schedule[0].Duration != 12*time.Hour || p.Schedule[0].Location != "Europe/Berlin" {
		t.Errorf("schedule %+v", p.Schedule)
	}
}

// TestDocumentedDefaults checks that docs/config.md's default column equals
// the code's defaults.
func TestDocumentedDefaults(t *testing.T) {
	b, err := os.ReadFile("../../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	doc := map[string]string{}
	for _, line := range strings.Split(string(b), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 6 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		key := strings.Trim(strings.TrimSpace(cells[1]), "`")
		if _, seen := doc[key]; !seen { // first table wins
			doc[key] = strings.Trim(strings.TrimSpace(cells[3]), "`")
		}
	}
	dur := func(s string) time.Duration {
		d, err := model.ParseDuration(s)
		if err != nil {
			t.Errorf("%q: %v", s, err)
		}
		return time.Duration(d)
	}
	for key, want := range map[string]time.Duration{
		"pollingInterval": DefaultInterval, "prometheus.timeout": DefaultTimeout, "window": DefaultWindow, "zero.cooldownPeriod": DefaultZeroCooldown,
	} {
		if got := dur(doc[key]); got != want {
			t.Errorf("docs say %s defaults to %q, code to %v", key, doc[key], want)
		}
	}
	for key, want := range map[string]string{
		"listen": DefaultListen, "quantile": fmt.Sprint(DefaultQuantile), "minReplicaCount": fmt.Sprint(DefaultMin), "timezone": DefaultScheduleTZ, "server": "vllm",
		"scrape.path": DefaultScrapePath,
	} {
		if doc[key] != want {
			t.Errorf("docs say %s defaults to %q, code to %q", key, doc[key], want)
		}
	}
}

// server defaults to vllm when absent, null or empty (as the string did);
// auto is auto.
func TestServerDefault(t *testing.T) {
	for line, want := range map[string]modelserver.Server{"": modelserver.VLLM, "  server:\n": modelserver.VLLM, "  server: \"\"\n": modelserver.VLLM, "  server: auto\n": modelserver.Unknown, "  server: sglang\n": modelserver.SGLang} {
		cfg, err := Parse([]byte("targets:\n- name: chat\n  scrape: [http://127.0.0.1:1/metrics]\n  metrics: [{type: queue, target: 4}]\n  max: 3\n"+line), "c.yaml")
		if err != nil || cfg.Targets[0].Server != want {
			t.Errorf("%q: %v %v, want %v", line, cfg, err, want)
		}
	}
}

// The runaway guard from the config: on by default with settle = the ttft
// window (3m by default) + 30 s = 210 s and drain 30 s; guard: {off: true}
// turns it off; settle/drain override.
// TestReplicaCapacity checks that a demand target's replica block sets the
// policy's capacity: the one pkg/replica's model of that GPU, model and TP
// gives (recommend.CapacityFrom), and that tp defaults to 1.
func TestReplicaCapacity(t *testing.T) {
	cfg, err := Parse([]byte(`targets:
- name: chat
  scrape: [http://10.0.0.5:8000/metrics]
  metrics: [{type: demand, target: 0.8}, {type: queuewait, target: 500ms}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  max: 8
`), "r.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := cfg.Targets[0].Policy()
	if err != nil {
		t.Fatal(err)
	}
	c := replica.DefaultConfig()
	c.GPU, _ = replica.LookupGPU("h100-sxm")
	c.Model, _ = replica.LookupModel("llama-3-8b")
	m, err := replica.New(c)
	if err != nil {
		t.Fatal(err)
	}
	if want := recommend.CapacityFrom(m); p.Capacity == nil || *p.Capacity != *want {
		t.Errorf("capacity %+v, want %+v", p.Capacity, want)
	}
	if q := cfg.Targets[0].Metrics[1]; q.Quantile != DefaultQuantile || time.Duration(q.Window) != DefaultWindow {
		t.Errorf("queuewait quantile %v window %v, want the defaults %v %v", q.Quantile, q.Window, DefaultQuantile, DefaultWindow)
	}
}

func TestGuardKey(t *testing.T) {
	base := "prometheus: {url: http://127.0.0.1:9090}\ntargets:\n- name: chat\n  selector: '{namespace=\"llm\"}'\n  max: 8\n"
	for _, c := range []struct {
		extra string
		want  recommend.Guard
	}{
		{"  metrics: [{type: queue, target: 24}]\n", recommend.Guard{Settle: 90 * time.Second, Drain: 30 * time.Second}},
		{"  metrics: [{type: ttft, target: 2s}]\n", recommend.Guard{Settle: 210 * time.Second, Drain: 30 * time.Second}},
		{"  metrics: [{type: ttft, target: 2s, window: 1m}]\n  guard: {drain: 45s}\n", recommend.Guard{Settle: 90 * time.Second, Drain: 45 * time.Second}},
		{"  metrics: [{type: queue, target: 24}]\n  guard: {off: true}\n", recommend.Guard{Off: true, Settle: 90 * time.Second, Drain: 30 * time.Second}},
		// queuewait is a trailing quantile as ttft: its default 3m window + 30 s.
		{"  metrics: [{type: queuewait, target: 1s}]\n", recommend.Guard{Settle: 210 * time.Second, Drain: 30 * time.Second}},
	} {
		cfg, err := Parse([]byte(base+c.extra), "g.yaml")
		if err != nil {
			t.Fatalf("%q: %v", c.extra, err)
		}
		p, err := cfg.Targets[0].Policy()
		if err != nil {
			t.Fatal(err)
		}
		if p.Guard == nil || *p.Guard != c.want {
			t.Errorf("%q: guard %+v, want %+v", c.extra, p.Guard, c.want)
		}
	}
}

// TestParseQuantity: the one target parser (config, decide --target,
// simulate's policy strings): numbers as written, durations in seconds in
// Prometheus's form and Go's.
func TestParseQuantity(t *testing.T) {
	for s, want := range map[string]Quantity{
		"24": {Value: 24, Set: true}, "0.7": {Value: 0.7, Set: true},
		"2s": {Value: 2, Duration: true, Set: true}, "500ms": {Value: 0.5, Duration: true, Set: true},
		"0.5s": {Value: 0.5, Duration: true, Set: true}, "1m30s": {Value: 90, Duration: true, Set: true},
		"1d": {Value: 86400, Duration: true, Set: true}, "1.5m": {Value: 90, Duration: true, Set: true},
	} {
		if got, err := ParseQuantity(s); err != nil || got != want {
			t.Errorf("%s: %+v %v, want %+v", s, got, err, want)
		}
	}
	for _, s := range []string{"2x", "NaN", "Inf", "", "s"} {
		if _, err := ParseQuantity(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

// TestHoldAndRampBound: the keys that make a target's policy
// simulate's recommended (docs/config.md) reach the policy, and bad values
// are refused at their key.
func TestHoldAndRampBound(t *testing.T) {
	base := "targets:\n- name: chat\n  scrape: [http://10.0.0.5:8000/metrics]\n  maxReplicaCount: 8\n  metrics: [{type: queue, target: 24}]\n"
	demand := "targets:\n- name: chat\n  scrape: [http://10.0.0.5:8000/metrics]\n  maxReplicaCount: 8\n  metrics: [{type: demand, target: 0.9}]\n  replica: {gpu: h100-sxm, model: llama-3-8b}\n  lookahead: 260s\n"
	cfg, err := Parse([]byte(demand+"  hold: {break_even: 3m}\n  ramp_bound: 0.78\n"), "h.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := cfg.Targets[0].Policy()
	if err != nil {
		t.Fatal(err)
	}
	if p.Hold == nil || p.Hold.BreakEven != 3*time.Minute || p.RampBound != 0.78 {
		t.Errorf("hold %+v ramp bound %v, want a 3m break-even and 0.78", p.Hold, p.RampBound)
	}
	if p, _ := mustParse(t, base).Targets[0].Policy(); p.Hold != nil || p.RampBound != 0 {
		t.Errorf("without the keys: hold %+v ramp bound %v, want off and 0", p.Hold, p.RampBound)
	}
	for extra, want := range map[string]string{
		"  ramp_bound: -1\n":         "h.yaml:6:15: targets[0].ramp_bound: -1 must be finite and >= 0",
		"  ramp_bound: .nan\n":       "h.yaml:6:15: targets[0].ramp_bound: NaN must be finite and >= 0",
		"  hold: {break_even: 0s}\n": "h.yaml:6:22: targets[0].hold.break_even: 0s must be > 0",
		"  hold: {brek_even: 3m}\n":  "h.yaml:6:10: targets[0].hold.brek_even: unknown key",
		"  hold: {}\n":               "h.yaml:6:9: targets[0].hold: break_even is required",
		"  ramp_bound: 0.26\n":       "h.yaml:6:15: targets[0].ramp_bound: 0.26: bounds the demand metric's projection over the lookahead; it needs a demand metric and a lookahead > 0",
		"  ramp_bound: lots\n":       "h.yaml:6:15: targets[0].ramp_bound:",
		// A year is the guard's bound, as settle= and drain= have in policy
		// strings; 99999h loaded and held every scale-up for 11 years.
		// "  guard: {settle: 1h, drain: " is 29 characters.
		"  guard: {settle: 8761h}\n":             "h.yaml:6:19: targets[0].guard.settle: 8761h0m0s: at most 8760h0m0s (a year;",
		"  guard: {settle: 1h, drain: 99999h}\n": "h.yaml:6:30: targets[0].guard.drain: 99999h0m0s: at most 8760h0m0s (a year;",
	} {
		_, err := Parse([]byte(base+extra), "h.yaml")
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want it to contain %q", extra, err, want)
		}
	}
}

func mustParse(t *testing.T, s string) *File {
	t.Helper()
	cfg, err := Parse([]byte(s), "h.yaml")
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestServeKubeExampleRBAC: examples/serve-kube.yaml's header gives the
// RBAC its targets need (docs/kubernetes.md, "RBAC per mode"). Worked off
// the file by hand: chat is a Deployment in llm with apply (get and update
// on deployments/scale, pods, HPAs), code a StatefulSet in batch without
// apply (get on statefulsets/scale, pods). The header named llm alone, so
// a Role made from it left code's reads forbidden.
func TestServeKubeExampleRBAC(t *testing.T) {
	const path = "../../examples/serve-kube.yaml"
	f, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{"chat": {"llm", "Deployment"}, "code": {"batch", "StatefulSet"}}
	for _, tg := range f.Targets {
		if w := want[tg.Name]; tg.ScaleTargetRef == nil || tg.Namespace != w[0] || tg.ScaleTargetRef.Kind != w[1] || tg.Apply != (tg.Name == "chat") {
			t.Errorf("%s: namespace %q ref %+v apply %v; the header below is worked for %v", tg.Name, tg.Namespace, tg.ScaleTargetRef, tg.Apply, w)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var header strings.Builder
	for _, l := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(l, "#") {
			break
		}
		header.WriteString(strings.TrimPrefix(l, "#"))
	}
	h := strings.Join(strings.Fields(header.String()), " ")
	for _, s := range []string{"in namespace llm (chat), get and update (apply) on deployments/scale, list/watch on pods and on horizontalpodautoscalers (apply)",
		"in namespace batch (code), get on statefulsets/scale and list/watch on pods"} {
		if !strings.Contains(h, s) {
			t.Errorf("%s header %q does not say %q", path, h, s)
		}
	}
}

// TestWindowBound: a ttft or queuewait window of 1h (MaxWindow) loads, one
// minute more is refused at the window's position ("  metrics: [{type:
// ttft, target: 2s, window: " is 45 characters).
func TestWindowBound(t *testing.T) {
	const doc = "targets:\n- name: chat\n  scrape: [http://10.0.0.5:8000/metrics]\n  metrics: [{type: ttft, target: 2s, window: %s}]\n  maxReplicaCount: 4\n"
	if _, err := Parse(fmt.Appendf(nil, doc, "1h"), "w.yaml"); err != nil {
		t.Errorf("window 1h: %v", err)
	}
	_, err := Parse(fmt.Appendf(nil, doc, "61m"), "w.yaml")
	if want := "w.yaml:4:46: targets[0].metrics[0].window: must be at most 1h"; err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("window 61m: %v, want prefix %q", err, want)
	}
}
