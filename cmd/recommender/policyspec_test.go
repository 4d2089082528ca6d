package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/replay"
)

// One policy rule, three syntaxes: the serve config, a policy string and
// the decide flags refuse the same values with recommend.Policy.Validate's
// words, each at its own position (file:line:col, column, flag).
func TestOnePolicySpecification(t *testing.T) {
	for _, tc := range []struct {
		name       string
		yaml       string // the target's policy keys in the config
		policy     string // the same as a policy string
		flags      []string
		msg        string // Validate's message, the same in all three
		configAt   string // the config's position and key
		policyAt   string // the policy string's column and label
		decideFlag string
	}{
		{
			// Line 5 (after targets:, - name:, scrape:, the comment);
			// "  metrics: [{type: kv, target: " is 31 characters.
			name: "kv above 1", yaml: "  metrics: [{type: kv, target: 1.5}]\n  max: 4\n",
			policy: "kv:1.5,max=4", flags: []string{"--metric", "kv", "--target", "1.5", "--max", "4"},
			msg:      "1.5 (150%) must be in (0, 1] (fraction of the KV cache)",
			configAt: "c.yaml:5:32: targets[0].metrics[0].target: ", policyAt: "at column 4: kv target: ", decideFlag: "--target (for --metric kv): ",
		},
		{
			// Line 7: `  schedule: [{cron: "0 8 * * *", duration: 1h, min: ` is 52
			// characters; "queue:4,max=3,schedule=" 23, then "0 8 * * *;1h;" 13.
			name: "schedule min above max", yaml: "  metrics: [{type: queue, target: 4}]\n  max: 3\n  schedule: [{cron: \"0 8 * * *\", duration: 1h, min: 5}]\n",
			policy: "queue:4,max=3,schedule=0 8 * * *;1h;5", flags: []string{"--max", "3", "--schedule", "0 8 * * *;1h;5"},
			msg:      "5 must be in 0..max (3)",
			configAt: "c.yaml:7:53: targets[0].schedule[0].min: ", policyAt: "at column 37: schedule min: ", decideFlag: `--schedule #1 "0 8 * * *;1h;5": min: `,
		},
		{
			// Line 7: "..., min: 2, timezone: " is 65 characters; "0 8 * * *;1h;2;" 15.
			name: "zone Local", yaml: "  metrics: [{type: queue, target: 4}]\n  max: 3\n  schedule: [{cron: \"0 8 * * *\", duration: 1h, min: 2, timezone: Local}]\n",
			policy: "queue:4,max=3,schedule=0 8 * * *;1h;2;Local", flags: []string{"--max", "3", "--schedule", "0 8 * * *;1h;2;Local"},
			msg:      `"Local" is the machine's zone`,
			configAt: "c.yaml:7:66: targets[0].schedule[0].timezone: ", policyAt: "at column 39: schedule location: ", decideFlag: `--schedule #1 "0 8 * * *;1h;2;Local": location: `,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "targets:\n- name: chat\n  scrape: [http://127.0.0.1:1/metrics]\n  # the policy\n" + tc.yaml
			_, err := config.Parse([]byte(doc), "c.yaml")
			if err == nil || !strings.Contains(err.Error(), tc.configAt+tc.msg) {
				t.Errorf("config: %v\nwant %q", err, tc.configAt+tc.msg)
			}
			_, err = replay.ParsePolicy(tc.policy)
			if err == nil || !strings.Contains(err.Error(), tc.policyAt+tc.msg) {
				t.Errorf("policy string: %v\nwant %q", err, tc.policyAt+tc.msg)
			}
			code, _, errs := runDecide(t, append([]string{"--queue", "1"}, tc.flags...)...)
			if code != exitInvalid || !strings.Contains(errs, tc.decideFlag+tc.msg) {
				t.Errorf("decide: exit %d, %q\nwant %q", code, errs, tc.decideFlag+tc.msg)
			}
		})
	}
	// Signal names are exact in all three.
	if _, err := config.Parse([]byte("targets:\n- name: chat\n  scrape: [http://127.0.0.1:1/metrics]\n  metrics: [{type: QUEUE, target: 4}]\n  max: 3\n"), "c.yaml"); err == nil || !strings.Contains(err.Error(), "lower case (queue)") {
		t.Errorf("config QUEUE: %v", err)
	}
	if _, err := replay.ParsePolicy("QUEUE:4"); err == nil {
		t.Error("policy string QUEUE:4 accepted")
	}
	if code, _, errs := runDecide(t, "--queue", "1", "--metric", "QUEUE"); code != exitInvalid || !strings.Contains(errs, "lower case (queue)") {
		t.Errorf("decide --metric QUEUE: exit %d, %q", code, errs)
	}
}

// decide's default max is recommend.DefaultMax, 100 (KEDA's
// maxReplicaCount), as a policy string's: queue 1000 on 100 at target 4
// wants ceil(1000/4) = 250, the scale-up limit allows max(100+4, 2×100) =
// 200, and max 100 caps it.
func TestDecideDefaultMax(t *testing.T) {
	wantDecision(t, decideOK(t, "--queue", "1000", "--current", "100"), 100, "TooManyReplicas")
	p, err := replay.ParsePolicy("queue:4")
	if err != nil || p.Recommend.Max != 100 {
		t.Errorf("policy string max %v (%v), want 100", p.Recommend, err)
	}
}

// decide names the flag of each field Validate refuses: each policy of
// --up-pods/--up-percent by its type, a tolerance set by --tolerance and
// by the --behavior file once.
func TestDecideFlagOfField(t *testing.T) {
	code, _, errs := runDecide(t, "--queue", "1", "--up-pods", "0", "--up-percent", "0")
	if code != exitInvalid || !strings.Contains(errs, "--up-pods: 0 must be >= 1") || !strings.Contains(errs, "--up-percent: 0 must be >= 1") {
		t.Errorf("exit %d, %q", code, errs)
	}
	path := filepath.Join(t.TempDir(), "b.yaml")
	if err := os.WriteFile(path, []byte("scaleDown:\n  tolerance: 0.2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs = runDecide(t, "--queue", "1", "--tolerance", "0.1", "--behavior", path)
	if code != exitInvalid || !strings.Contains(errs, "--tolerance: set both in the policy and in behavior") {
		t.Errorf("exit %d, %q", code, errs)
	}
}
