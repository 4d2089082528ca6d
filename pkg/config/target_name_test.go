package config

import (
	"errors"
	"strings"
	"testing"
)

// TestErrorsNameTheTarget: a problem under targets[i] ends with that
// target's name, so a config of many targets is read by name; a target
// without a name, and a key outside the targets, get none. By hand: the
// second target (index 1, "code") has target 0, the first ("chat") a
// max below its min; the third has no name.
func TestErrorsNameTheTarget(t *testing.T) {
	in := "pollingInterval: 0s\ntargets:\n" +
		"- {name: chat, scrape: ['http://h:1/m'], metrics: [{type: queue, target: 4}], minReplicaCount: 3, maxReplicaCount: 2}\n" +
		"- {name: code, scrape: ['http://h:2/m'], metrics: [{type: queue, target: 0}], maxReplicaCount: 3}\n" +
		"- {scrape: ['http://h:3/m'], metrics: [{type: queue, target: 4}], maxReplicaCount: 3}\n"
	_, err := Parse([]byte(in), "t.yaml")
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("%v: want Errors", err)
	}
	want := map[string]string{"pollingInterval": "", "targets[0].minReplicaCount": "chat", "targets[1].metrics[0].target": "code", "targets[2].name": ""}
	seen := map[string]bool{}
	for _, e := range es {
		w, ok := want[e.Key]
		if !ok {
			continue
		}
		seen[e.Key] = true
		if e.Target != w {
			t.Errorf("%s: target %q, want %q (%v)", e.Key, e.Target, w, e)
		}
		if s := e.Error(); w != "" && !strings.HasSuffix(s, ` (target "`+w+`")`) {
			t.Errorf("%q: want it to end with (target %q)", s, w)
		}
	}
	for k := range want {
		if !seen[k] {
			t.Errorf("no problem at %s in %v", k, es)
		}
	}
}
