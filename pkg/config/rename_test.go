package config

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
)

// oldKeys is a target written with every key's old name; newKeys the same
// with the new names.
const (
	oldKeys = `interval: 30s
targets:
- name: chat
  scrape: [http://10.0.0.5:8000/metrics]
  metrics: [{type: queue, target: 24}]
  min: 0
  max: 6
  zero: {cooldown: 2m, held_scrape: http://10.0.0.9:9090/metrics}
  schedule: [{cron: "0 8 * * *", duration: 1h, min: 3}]
`
	newKeys = `pollingInterval: 30s
targets:
- name: chat
  scrape: [http://10.0.0.5:8000/metrics]
  metrics: [{type: queue, target: 24}]
  minReplicaCount: 0
  maxReplicaCount: 6
  zero: {cooldownPeriod: 2m, held_scrape: http://10.0.0.9:9090/metrics}
  schedule: [{cron: "0 8 * * *", duration: 1h, desiredReplicas: 3}]
`
)

// TestRenamedKeysLoad checks that the old names still load, to the same
// values as the new ones, each with a deprecation at its own line and
// column naming the new key; and that the new names load without one.
func TestRenamedKeysLoad(t *testing.T) {
	old, err := Parse([]byte(oldKeys), "old.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cur, err := Parse([]byte(newKeys), "new.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(cur.Deprecations) != 0 {
		t.Errorf("new keys: deprecations %v", cur.Deprecations)
	}
	o, c := old.Targets[0], cur.Targets[0]
	if old.Interval != cur.Interval || *o.Min != 0 || *o.Max != 6 || o.Zero.Cooldown != c.Zero.Cooldown || o.Schedule[0].Min != 3 ||
		*c.Min != 0 || *c.Max != 6 || c.Schedule[0].Min != 3 || old.IntervalDuration().Seconds() != 30 || o.Zero.Cooldown.String() != "2m" {
		t.Errorf("old keys decode to %+v, new keys to %+v", o, c)
	}
	// Positions counted in oldKeys by hand.
	want := []string{
		"old.yaml:1:1: interval: deprecated key, read until the next release: rename it pollingInterval",
		"old.yaml:6:3: targets[0].min: deprecated key, read until the next release: rename it minReplicaCount",
		"old.yaml:7:3: targets[0].max: deprecated key, read until the next release: rename it maxReplicaCount",
		"old.yaml:8:10: targets[0].zero.cooldown: deprecated key, read until the next release: rename it cooldownPeriod",
		"old.yaml:9:48: targets[0].schedule[0].min: deprecated key, read until the next release: rename it desiredReplicas",
	}
	if len(old.Deprecations) != len(want) {
		t.Fatalf("deprecations:\n%v\nwant %d", Errors(old.Deprecations), len(want))
	}
	for i, w := range want {
		if got := old.Deprecations[i].Error(); !strings.HasPrefix(got, w) {
			t.Errorf("deprecation %d = %q, want prefix %q", i, got, w)
		}
	}
}

// TestRenamedKeysErrors checks that a problem with an old key's value
// names the key as written, that a key given under both names is refused,
// and that a bare number where a duration goes says what to write.
func TestRenamedKeysErrors(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"targets:\n- {name: a, scrape: ['http://h:1/m'], metrics: [{type: queue, target: 2}], min: 3, max: 2}\n",
			"x.yaml:2:81: targets[0].min: 3 must be <= max 2"},
		{"targets:\n- {name: a, scrape: ['http://h:1/m'], metrics: [{type: queue, target: 2}], minReplicaCount: 3, maxReplicaCount: 2}\n",
			"x.yaml:2:93: targets[0].minReplicaCount: 3 must be <= max 2"},
		{"targets:\n- {name: a, scrape: ['http://h:1/m'], metrics: [{type: queue, target: 2}], max: 2, maxReplicaCount: 3}\n",
			"x.yaml:2:84: targets[0].maxReplicaCount: max is the old name of maxReplicaCount, given too; keep maxReplicaCount"},
		{"interval: 0s\ntargets:\n- {name: a, scrape: ['http://h:1/m'], metrics: [{type: queue, target: 2}], maxReplicaCount: 3}\n",
			"x.yaml:1:11: interval: must be more than 0"},
		// KEDA's integer seconds are read under KEDA's name only.
		{"targets:\n- {name: a, scrape: ['http://h:1/m'], metrics: [{type: queue, target: 2}], minReplicaCount: 0, maxReplicaCount: 3, zero: {cooldown: 300, held_scrape: 'http://h:2/m'}}\n",
			"x.yaml:2:133: targets[0].zero.cooldown: 300 has no unit: write 300s for seconds (integer seconds are read under KEDA's name, cooldownPeriod)"},
		{"targets:\n- {name: a, scrape: ['http://h:1/m'], metrics: [{type: queue, target: 2}], maxReplicaCount: 3, schedule: [{cron: '@daily', duration: 1h, min: 4}]}\n",
			"x.yaml:2:143: targets[0].schedule[0].min: 4 must be in 0..max (3)"},
	} {
		_, err := Parse([]byte(c.in), "x.yaml")
		var es Errors
		if !errors.As(err, &es) || len(es) != 1 || !strings.HasPrefix(es[0].Error(), c.want) {
			t.Errorf("%q:\ngot  %v\nwant the one problem %s", c.in, err, c.want)
		}
	}
}

// TestRenamedKeyTwiceValueChecked: a key given under both names is
// refused, and the value read (the first spelling's) is still checked:
// all of a file's problems at once. pollingInterval: 2h (past 1h) beside
// interval: 15s said the second name alone. Line 1 "pollingInterval: "
// is 17 characters, the value at 18; "interval" at 2:1.
func TestRenamedKeyTwiceValueChecked(t *testing.T) {
	_, err := Parse([]byte("pollingInterval: 2h\ninterval: 15s\ntargets:\n- {name: a, scrape: ['http://h:1/m'], metrics: [{type: queue, target: 2}], maxReplicaCount: 3}\n"), "x.yaml")
	want := []string{ // in the file's order
		"x.yaml:1:18: pollingInterval: must be 1s to 1h (the decision period; the HPA syncs every 15s), got 2h0m0s",
		"x.yaml:2:1: interval: interval is the old name of pollingInterval, given too; keep pollingInterval",
	}
	var es Errors
	if !errors.As(err, &es) || len(es) != len(want) {
		t.Fatalf("got %v\nwant the %d problems %q", err, len(want), want)
	}
	for i, w := range want {
		if es[i].Error() != w {
			t.Errorf("problem %d: %q, want %q", i, es[i].Error(), w)
		}
	}
}

// TestTopLevelKeyInTarget: a key of the file written in a target (indented
// under it) says where it goes, after the target's allowed keys, instead
// of the list alone. Line 2 "- {name: a, scrape: ['http://h:1/m'], metrics:
// [{type: queue, target: 2}], maxReplicaCount: 3, " is 95 characters.
func TestTopLevelKeyInTarget(t *testing.T) {
	_, err := Parse([]byte("targets:\n- {name: a, scrape: ['http://h:1/m'], metrics: [{type: queue, target: 2}], maxReplicaCount: 3, pollingInterval: 30s}\n"), "x.yaml")
	var es Errors
	if !errors.As(err, &es) || len(es) != 1 || !strings.HasPrefix(es[0].Error(), "x.yaml:2:96: targets[0].pollingInterval: unknown key; allowed here: ") ||
		!strings.HasSuffix(es[0].Error(), "; it is a key of the file (at the top level, beside targets:), one for every target: move it out of the target (target \"a\")") {
		t.Errorf("got %v\nwant the one problem at 2:96 saying pollingInterval is a key of the file", err)
	}
}

// TestRenamedKeysDocumented checks that docs/config.md's "Renamed keys"
// table lists every old name with its new one, and that every new name
// is a key of its struct.
func TestRenamedKeysDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	for typ, m := range renamedKeys {
		fields := fieldsOf(typ)
		for old, cur := range m {
			if _, ok := fields[cur]; !ok {
				t.Errorf("%v: %s is no key", typ, cur)
			}
			if row := "| `" + old + "` | `" + cur + "` |"; !strings.Contains(string(doc), row) {
				t.Errorf("docs/config.md lacks the row %q", row)
			}
		}
	}
}

// TestRenamedKeysBounded: a file with thousands of old keys lists the
// first MaxErrors deprecations and one line saying there are more.
func TestRenamedKeysBounded(t *testing.T) {
	var b strings.Builder
	b.WriteString("targets:\n")
	for i := range 600 { // 1,200 old keys
		fmt.Fprintf(&b, "- {name: t%d, scrape: ['http://h:%d/m'], metrics: [{type: queue, target: 2}], min: 1, max: 3}\n", i, 1000+i)
	}
	f, err := Parse([]byte(b.String()), "big.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Deprecations) != MaxErrors+1 || !strings.HasPrefix(f.Deprecations[MaxErrors].Msg, "more deprecated keys not listed") {
		t.Errorf("%d deprecations, last %v; want %d and a last line saying there are more", len(f.Deprecations), f.Deprecations[len(f.Deprecations)-1], MaxErrors+1)
	}
}
