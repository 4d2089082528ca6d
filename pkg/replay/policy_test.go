package replay

import (
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/infscale/infscale/pkg/recommend"
)

func TestParsePolicy(t *testing.T) {
	p, err := ParsePolicy("queue:24,min=0,max=12,lookahead=90,cooldown=2m,uppods=2/60s,downpercent=50,upwindow=30,downwindow=10m,tolerance=5%,waiting:2")
	if err != nil {
		t.Fatal(err)
	}
	r := p.Recommend
	if len(r.Metrics) != 2 || r.Metrics[0] != (recommend.Metric{Signal: recommend.SignalQueue, Target: 24}) || r.Metrics[1] != (recommend.Metric{Signal: recommend.SignalWaiting, Target: 2}) {
		t.Errorf("metrics %+v", r.Metrics)
	}
	if r.Min != 0 || r.Max != 12 || r.Lookahead != 90*time.Second || r.Zero.Cooldown != 2*time.Minute {
		t.Errorf("bounds/lookahead/cooldown %d %d %v %v", r.Min, r.Max, r.Lookahead, r.Zero)
	}
	if *r.Tolerance != (recommend.Tolerance{Up: 0.05, Down: 0.05}) {
		t.Errorf("tolerance %+v", *r.Tolerance)
	}
	up, down := r.Behavior.ScaleUp, r.Behavior.ScaleDown
	if *up.StabilizationWindowSeconds != 30 || *down.StabilizationWindowSeconds != 600 {
		t.Errorf("windows %d %d", *up.StabilizationWindowSeconds, *down.StabilizationWindowSeconds)
	}
	if len(up.Policies) != 1 || up.Policies[0] != (autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: 2, PeriodSeconds: 60}) {
		t.Errorf("up policies %+v", up.Policies)
	}
	if len(down.Policies) != 1 || down.Policies[0] != (autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PercentScalingPolicy, Value: 50, PeriodSeconds: 15}) {
		t.Errorf("down policies %+v", down.Policies)
	}
	for _, s := range []string{"cpu:60", "ttft:2s", "ttft:500ms", "waiting:1", "running:32", "kv:75%", "fixed:3", "knative:10,min=1", "oracle,max=8",
		"hpa(queue:24)", "hpa(queue:24,lookahead=90),tolerance=0.05,downwindow=60", "recommended", "hpa(recommended)",
		"queue:24,schedule=0 8 * * 1-5;10h;4"} {
		if _, err := ParsePolicy(s); err != nil {
			t.Errorf("%q: %v", s, err)
		}
	}
}

func TestParsePolicyErrors(t *testing.T) {
	for spec, want := range map[string]string{
		"":                           "column 1: empty policy",
		"queue":                      "column 1: \"queue\": want SIGNAL:TARGET",
		"qeue:24":                    "column 1: \"qeue:24\": want SIGNAL:TARGET",
		"queue:x":                    "column 7: queue target \"x\"",
		"queue:24,mni=0":             "column 10: unknown option mni; allowed: min, max",
		"queue:24,lookahead=soon":    "column 20: lookahead=\"soon\"",
		"hpa(queue:24),upselect=max": "column 24: upselect=\"max\": want Max, Min or Disabled",
		"kv:1.5":                     "column 4: kv target: 1.5 (150%) must be in (0, 1]",
		"cpu:60,min=0":               "column 5: cpu target: cpu cannot scale from zero", // pkg/recommend refuses cpu with min 0
		"queue:24,cooldown=60":       "policy \"queue:24,cooldown=60\"",
		"fixed:-1":                   "column 7: fixed:N wants",
		"fixed:10001":                "column 7: fixed:N wants a replica count N from 0 to 10000 (the most replicas a replay runs), got \"10001\"",
		"queue:24,max=10001":         "column 14: max=\"10001\": want at most 10000 replicas (the most a replay runs)",
		"queue:24,min=10001":         "column 14: min=\"10001\": want at most 10000",
		"knative:5,max=10001":        "column 15: max=\"10001\": want a replica count 0..10000",
		"fixed:2,min=1":              "column 9: fixed:N takes no options",
		"knative:0":                  "column 9: knative:C wants",
		"knative:5,window=6":         "column 11: \"window=6\": this baseline takes only min= and max=",
		"oracle:3":                   "column 7: oracle takes no target",
		"hpa(queue:24":               "no closing parenthesis",
		"hpa(fixed:3)":               "column 5: hpa(...) wraps an infscale policy",
		"hpa(queue:24),lookahead=90": "column 15: lookahead is not an HPA option",
		"hpa(queue:x)":               "column 11: queue target",
		"min=1,queue:24":             "column 1: a policy starts with",
		"queue:24,uppods=0":          "column 17: uppods: 0 must be >= 1",
		// 1000000 h = 3.6e9 s does not fit the HPA's int32 seconds: still
		// the range, not "whole seconds".
		"queue:24,downwindow=1000000h": "column 21: downwindow=\"1000000h\": 3600000000 must be in 0..3600",
		"queue:24,downwindow=1.5":      "column 21: downwindow=\"1.5\": want whole seconds",
		// "queue:8," is 8 characters: min=2 at column 9, the second min at 15.
		"queue:8,min=2,min=1": "column 15: option min given twice (also at column 9)",
		// A signal twice names the first by its column, not by the policy
		// struct's metrics[0]: "demand:" is 7 characters, its target at 8;
		// "demand:0.9,demand:" 18, the second target at 19.
		"demand:0.9,demand:0.8": `policy "demand:0.9,demand:0.8": at column 19: demand target: demand is listed twice (also at column 8); one entry per signal`,
		// The rules are recommend.Policy.Validate's; the column is the field's:
		// "queue:24,schedule=" is 18 characters, "0 8 * * *;1h;2;" 15 more.
		"queue:24,schedule=0 8 * * *;1h;2;Local":   "column 34: schedule location: \"Local\" is the machine's zone",
		"queue:24,max=3,schedule=0 8 * * *; 1h; 5": "column 40: schedule min: 5 must be in 0..max (3)",
		"queue:24,min=-1":                          "column 14: min: -1 must be >= 0",
		"queue:24,schedule=0 8 * * *; soon;2":      "column 30: schedule duration: \"soon\": want a duration",
		// A signal in another case says the rule (docs/simulate.md) and
		// the spelling, where it listed every form a policy may take:
		// "queue:24," is 9 characters, Demand at column 10.
		"QUEUE:24":            `policy "QUEUE:24": at column 1: "QUEUE:24": signal names are lower case: write queue:24`,
		"queue:24,Demand:0.8": `at column 10: "Demand:0.8": signal names are lower case: write demand:0.8`,
		// 2^31 wrapped to a negative int32 before.
		"queue:24,uppods=2147483648": "column 17: uppods=\"2147483648\": want an integer 1..2147483647",
		// NaN and 10^10 s overflowed time.Duration ("-2562047h47m16.854775808s must be >= 0").
		"queue:24,lookahead=NaN":      "column 20: lookahead=\"NaN\": want seconds from 0 to 31536000 (365 days, 8760h)",
		"queue:24,lookahead=1e10":     "column 20: lookahead=\"1e10\": want seconds from 0 to 31536000 (365 days, 8760h)",
		"queue:24,min=0,cooldown=Inf": "column 25: cooldown=\"Inf\": want seconds from 0 to 31536000 (365 days, 8760h)",
		"hpa(hpa(queue:24))":          "column 5: hpa(...) wraps an infscale policy, not another hpa(...)",
		"recommended,max=5":           "column 13: recommended takes no options",
		// The ramp bound in words a user can work out, not a Go function's name.
		"recommended,lookahead=1":   "Z the standard normal quantile of cold start / (cold start + 60 s) (the reference replica's: lookahead=136,hold=182,rampbound=0.26",
		"queue:24,schedule=0 8 * *": "want CRON;DURATION;MIN",
	} {
		_, err := ParsePolicy(spec)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want it to contain %q", spec, err, want)
		}
	}
}

// TestParsePolicySeveralJoined: a policy string that is whole policies
// joined by commas (-p recommended,fixed:1 for -p recommended -p fixed:1)
// says so and gives the flags that compare them; a comma that continues a
// policy gets no such reading.
func TestParsePolicySeveralJoined(t *testing.T) {
	for spec, want := range map[string]string{
		// "recommended," is 12 characters: fixed:1 at column 13.
		"recommended,fixed:1": `policy "recommended,fixed:1": at column 13: recommended takes no options; ` +
			`write it out to change it: demand:0.9,lookahead=136,downwindow=60,ttft:2,queuewait:0.4,hold=B,rampbound=Z ` +
			`with the lookahead the replica's cold start + 45 s, B 2 cold starts and Z the standard normal quantile of ` +
			`cold start / (cold start + 60 s) (the reference replica's: lookahead=136,hold=182,rampbound=0.26; docs/recommend.md); ` +
			`it reads as two policies, recommended and fixed:1: to compare them, give each its own --policy ` +
			`(simulate, backtest: -p recommended -p fixed:1); a policy's commas join its own parts`,
		"oracle,optimal":   `; it reads as two policies, oracle and optimal: to compare them, give each its own --policy (simulate, backtest: -p oracle -p optimal)`,
		"fixed:1,queue:24": `at column 9: fixed:N takes no options; it reads as two policies, fixed:1 and queue:24:`,
		// The second policy keeps its own options; a shell would read hpa(...) unquoted as a subshell.
		"recommended,queue:24,lookahead=90": `it reads as two policies, recommended and queue:24,lookahead=90: ` +
			`to compare them, give each its own --policy (simulate, backtest: -p recommended -p queue:24,lookahead=90)`,
		"hpa(recommended),fixed:2":                 `(simulate, backtest: -p 'hpa(recommended)' -p fixed:2)`,
		"recommended,fixed:1,fixed:2":              `it reads as 3 policies, recommended, fixed:1 and fixed:2: to compare them, give each its own --policy (simulate, backtest: -p recommended -p fixed:1 -p fixed:2)`,
		"queue:24,schedule=0 8 * * *;1h;2,fixed:1": `(simulate, backtest: -p 'queue:24,schedule=0 8 * * *;1h;2' -p fixed:1)`,
	} {
		_, err := ParsePolicy(spec)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v\nwant it to contain %q", spec, err, want)
		}
	}
	for _, spec := range []string{
		"recommended,lookahead=90",        // an option of recommended: no second policy
		"queue:24,lookahead=x,fixed:1",    // the problem is an option's value, not where fixed:1 starts
		"recommended,fixed:1,lookahead=3", // fixed:1,lookahead=3 is no policy
		"hpa(recommended,fixed:2)",        // inside hpa(...) a comma is hpa's
		"queue:24,queue:30",               // one signal twice, as a config's metrics list refuses it
	} {
		_, err := ParsePolicy(spec)
		if err == nil || strings.Contains(err.Error(), "reads as") {
			t.Errorf("%q: err = %v, want an error without a reading as several policies", spec, err)
		}
	}
}

// FuzzParsePolicy: any string parses or fails with an error, never a panic;
// a policy that parses builds a controller that decides.
func FuzzParsePolicy(f *testing.F) {
	for _, s := range append(DefaultPolicies, "hpa(hpa(queue:1))", "queue:24,schedule=* * * * *;1h;2", "knative:", "oracle,min=3,max=2", "queue:1e308", "ttft:-1s", "hpa(", ")", ",,,") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		p, err := ParsePolicy(s)
		if err != nil {
			return
		}
		if p.build == nil || p.Name == "" {
			t.Fatalf("%q parsed without a builder", s)
		}
	})
}
