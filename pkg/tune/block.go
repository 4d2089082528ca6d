package tune

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/modelserver"
)

// Serve is where the serve block's target reads its series: the tuned
// history's Prometheus base URL, server profile (modelserver.Names),
// selector and replicas query, and the target's name. Empty fields (tuning
// on a trace) are printed as placeholders marked "# fill in: ...".
type Serve struct {
	Name, PrometheusURL, Server, Selector, Replicas string
	// From is the serve config file the history's target came from; the
	// block then says to copy that file's other prometheus: keys (auth,
	// TLS, timeout), which it does not print.
	From string
	// Replica is the target's replica: value, a YAML flow mapping such as
	// {gpu: h100-sxm, model: llama-3-8b}, printed when the winner is the
	// demand signal (which divides by its capacity); empty: a placeholder.
	// ReplicaNote, when set, is a comment beside it (e.g. that the
	// replay's replica had settings serve's replica: cannot carry).
	Replica, ReplicaNote string
	// Zero is the target's zero: block when it scales to zero
	// (minReplicaCount 0): the block keeps it, its cooldownPeriod as
	// given (the candidate's cooldown= is it in seconds, at most a year).
	Zero *config.Zero
}

// Block is the candidate as a whole serve configuration file (pkg/config):
// the prometheus section and one target reading s's series, with max
// replicas max. It loads as printed; the placeholders of s's empty fields
// are valid values, each commented with what to fill in.
func (c Candidate) Block(s Serve, max int) string {
	var b strings.Builder
	val := func(v, placeholder, what string) string {
		if v == "" {
			return placeholder + "  # fill in: " + what
		}
		return v
	}
	str := func(v, placeholder, what string) string { // a string, quoted as YAML needs
		if v == "" {
			return val(v, placeholder, what)
		}
		return YAMLScalar(v)
	}
	fmt.Fprintf(&b, "prometheus:\n  url: %s\n", str(s.PrometheusURL, "http://prometheus:9090", "your Prometheus base URL"))
	if s.From != "" {
		fmt.Fprintf(&b, "  # auth, TLS and timeout: copy them from the prometheus: section of %s\n", s.From)
	}
	fmt.Fprintf(&b, "targets:\n- name: %s\n  server: %s\n", str(s.Name, "chat", "a name for the Deployment"),
		str(s.Server, "vllm", "the model server: "+strings.Join(modelserver.Names(), ", ")))
	fmt.Fprintf(&b, "  selector: %s\n", str(s.Selector, `'{namespace="llm",pod=~"chat-.*"}'`, "the label matchers of the Deployment's series"))
	if s.Replicas != "" {
		fmt.Fprintf(&b, "  replicas: %s\n", YAMLScalar(s.Replicas))
	}
	fmt.Fprintf(&b, "  metrics:\n  - type: %s\n    target: %s\n", c.Metric, strconv.FormatFloat(c.Target, 'g', -1, 64))
	if c.Guard > 0 {
		// The replay's quantiles trail 60 s (replay.Config.TTFTWindow);
		// serve's default window is 3m.
		for _, g := range []struct {
			signal string
			target float64
		}{{"ttft", c.Guard}, {"queuewait", c.Guard / 5}} {
			fmt.Fprintf(&b, "  - type: %s\n    target: %s\n    window: 1m  # the replay's quantile window\n", g.signal, time.Duration(math.Round(g.target*1e9)))
		}
	}
	if c.Metric == "demand" {
		note := ""
		if s.ReplicaNote != "" {
			note = "  # " + s.ReplicaNote
		}
		fmt.Fprintf(&b, "  replica: %s%s\n", val(s.Replica, "{gpu: h100-sxm, model: llama-3-8b}", "your GPU and model (infscale gpu --list)"), note)
	}
	floor := 1.0
	if v, ok := c.Option("min"); ok { // the option's name; its key is minReplicaCount
		floor = v
	}
	fmt.Fprintf(&b, "  minReplicaCount: %s\n  maxReplicaCount: %d\n", strconv.FormatFloat(floor, 'g', -1, 64), max)
	var keys []keyValue
	for _, o := range c.Options {
		switch {
		case o.Key == "minReplicaCount":
		case o.Key == "zero.cooldownPeriod" && s.Zero != nil: // the target's, below
		case o.Key == "":
			fmt.Fprintf(&b, "  # %s=%s: serve has no key for this option yet; the replay ran with it\n", o.Name, o.text())
		case o.Value != o.Default:
			v := o.text()
			if o.Duration {
				v += "s"
			}
			keys = append(keys, keyValue{strings.Split(o.Key, "."), v})
		}
	}
	if c.RampBound > 0 {
		fmt.Fprintf(&b, "  ramp_bound: %s\n", strconv.FormatFloat(c.RampBound, 'g', -1, 64))
	}
	if c.Hold > 0 {
		fmt.Fprintf(&b, "  hold: {break_even: %ss}\n", strconv.FormatFloat(c.Hold, 'g', -1, 64))
	}
	if z := s.Zero; z != nil {
		keys = append(keys, keyValue{[]string{"zero", "cooldownPeriod"}, z.Cooldown.String()})
		if z.Held != "" {
			keys = append(keys, keyValue{[]string{"zero", "held"}, YAMLScalar(z.Held)})
		}
		if z.FlowControl {
			keys = append(keys, keyValue{[]string{"zero", "flow_control"}, "true"})
		}
	}
	writeKeys(&b, "  ", keys)
	return b.String()
}

// keyValue is one YAML key path and its scalar.
type keyValue struct {
	path  []string
	value string
}

// writeKeys prints kvs as nested block mappings at indent, a shared
// parent once, in the order of first appearance.
func writeKeys(b *strings.Builder, indent string, kvs []keyValue) {
	done := map[string]bool{}
	for _, kv := range kvs {
		k := kv.path[0]
		if done[k] {
			continue
		}
		done[k] = true
		if len(kv.path) == 1 {
			fmt.Fprintf(b, "%s%s: %s\n", indent, k, kv.value)
			continue
		}
		var sub []keyValue
		for _, o := range kvs {
			if o.path[0] == k && len(o.path) > 1 {
				sub = append(sub, keyValue{o.path[1:], o.value})
			}
		}
		fmt.Fprintf(b, "%s%s:\n", indent, k)
		writeKeys(b, indent+"  ", sub)
	}
}
