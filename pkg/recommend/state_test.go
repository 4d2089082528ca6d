package recommend

import (
	"encoding/json"
	"math"
	"reflect"
	"strings"
	"testing"
	"time"
)

// A state that went through JSON decides exactly as the one that did not
// (decide --state, serve's restart safety).
func TestStateJSONRoundTrip(t *testing.T) {
	p := queuePolicy(4)
	p.Max, p.Lookahead = 50, 60*time.Second
	mustValidate(t, p)
	var live State
	load := []float64{12, 30, 60, 60, 20, 8, 4, 4, 40}
	cur := 1
	for i, q := range load[:5] {
		cur = Decide(p, queueObs(cur, q), &live, at(int64(i*15))).Desired
	}
	data, err := json.Marshal(&live)
	if err != nil {
		t.Fatal(err)
	}
	var restored State
	if err := json.Unmarshal(data, &restored); err != nil {
		t.Fatal(err)
	}
	for i, q := range load[5:] {
		now := at(int64((i + 5) * 15))
		a, b := Decide(p, queueObs(cur, q), &live, now), Decide(p, queueObs(cur, q), &restored, now)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("t=%v: live %d (%s), restored %d (%s)", now, a.Desired, a.Reason, b.Desired, b.Reason)
		}
		cur = a.Desired
	}
}

// The state stays bounded: only what the longest window or period needs.
func TestStateBounded(t *testing.T) {
	p := queuePolicy(4)
	p.Max, p.Lookahead = 100, 90*time.Second
	mustValidate(t, p)
	var st State
	cur := 1
	for i := range 10000 {
		q := 40 + 38*math.Sin(float64(i)/20) // swings that scale both ways
		cur = Decide(p, queueObs(cur, q), &st, at(int64(i*15))).Desired
	}
	// down window 300 s at 15 s: at most 20 entries after now−300, + this one.
	if n := len(st.Recommendations); n > 21 {
		t.Errorf("%d recommendations kept, want <= 21", n)
	}
	// 15 s periods: only events after now−15 s, so at most the one just made.
	if n := len(st.ScaleUpEvents) + len(st.ScaleDownEvents); n > 2 {
		t.Errorf("%d scale events kept, want <= 2", n)
	}
	// 2 × 90 s of demand at 15 s: 12 samples.
	if n := len(st.Demand); n > 12 {
		t.Errorf("%d demand samples kept, want <= 12", n)
	}
}

// Decision JSON has the keys the decide command promises; unknown is null.
func TestDecisionJSON(t *testing.T) {
	p := &Policy{Metrics: []Metric{{Signal: SignalQueue, Target: 4}, {Signal: SignalKV, Target: 0.8}}, Min: 1, Max: 10}
	mustValidate(t, p)
	d := Decide(p, Observation{Current: 2, Running: 2, Waiting: 10, Held: nan, KV: nan, CPU: nan, TTFT: nan}, nil, at(0))
	b, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{`"desired":3`, `"current":2`, `"reason":"DesiredWithinRange"`, `"raw":{"queue":{"signal":"queue","value":12,`, `"kv":{"signal":"kv","value":null,"target":0.8,"ratio":null,"replicas":null,"desired":null,"valid":false}`, `"steps":[{"stage":"metric","reason":"DesiredWithinRange","value":3,"text":"queue 12 / target 4 per replica = 3`} {
		if !strings.Contains(s, want) {
			t.Errorf("missing %s in %s", want, s)
		}
	}
	var back Decision
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.Desired != 3 || back.Reason != ReasonMetric || len(back.Raw) != 2 || !math.IsNaN(back.Raw[1].Value) || back.Raw[0].Value != 12 {
		t.Errorf("round trip %+v", back)
	}
}

// Every reason has a name and parses back.
func TestReasonNames(t *testing.T) {
	want := "DesiredWithinRange tolerance ScaleUpStabilized ScaleDownStabilized ScaleUpLimit ScaleDownLimit TooFewReplicas TooManyReplicas idle-to-zero activate schedule no-data lookahead partial-data cooldown guard hold pair"
	var got []string
	for _, r := range Reasons() {
		got = append(got, r.String())
		var back Reason
		if err := back.UnmarshalText([]byte(r.String())); err != nil || back != r {
			t.Errorf("%s: %v", r, err)
		}
	}
	if strings.Join(got, " ") != want {
		t.Errorf("reasons %v", got)
	}
}

// A dip's from and floor are replica counts: a negative one is refused,
// named by its path.
func TestStateDipCounts(t *testing.T) {
	st := State{LastAt: at(30), Dips: []Dip{{At: at(0), Seconds: 30, Returned: true, Back: 2, From: 3, Floor: 1}}}
	if err := st.Validate(); err != nil {
		t.Fatalf("valid dip: %v", err)
	}
	st.Dips[0].Floor = -1
	if err := st.Validate(); err == nil || !strings.Contains(err.Error(), "dips[0].floor") {
		t.Errorf("floor -1: %v, want an error naming dips[0].floor", err)
	}
}

// Dips are kept in the order they ended: a part of a dip that returned
// first (started at 60 s, ended at 75 s) precedes the rest (started at
// 15 s, ended at 90 s); one that ends before the entry before it is refused.
func TestStateDipOrder(t *testing.T) {
	st := State{LastAt: at(90), Dips: []Dip{{At: at(60), Seconds: 15, Returned: true, Back: 2, From: 2, Floor: 1},
		{At: at(15), Seconds: 75, Returned: true, Back: 3, From: 3, Floor: 2}}}
	if err := st.Validate(); err != nil {
		t.Fatalf("dips in the order they ended: %v", err)
	}
	st.Dips[1].Seconds = 50 // ends at 65 s, before the first's 75 s
	if err := st.Validate(); err == nil || !strings.Contains(err.Error(), "dips[1].seconds: 50: the dip ends at 1970-01-01T00:01:05Z, before the previous entry's end 1970-01-01T00:01:15Z") {
		t.Errorf("a dip ending before the one before it: %v, want dips[1].seconds named with both ends", err)
	}
}

// A decision's history without last_at (a file edited or cut) is refused,
// naming what it holds: read as fresh, its history would still limit the
// next decision. decide and serve's restore read it through Validate.
func TestStateHistoryWithoutLastAt(t *testing.T) {
	st := State{LastDesired: 8, Inherited: 8, Recommendations: []TimedReplicas{{At: at(1000), Replicas: 8}}}
	err := st.Validate()
	if err == nil || !strings.Contains(err.Error(), "last_at: missing, but the state holds a decision's history (recommendations, last_desired, inherited)") {
		t.Errorf("history without last_at: %v, want last_at named with the fields that hold it", err)
	}
	st.LastAt = at(1000)
	if err := st.Validate(); err != nil {
		t.Errorf("with last_at: %v", err)
	}
	if err := (&State{}).Validate(); err != nil {
		t.Errorf("an empty state (no decision yet): %v", err)
	}
}

// TestStateZeroTime: a time left out and one written as Go's zero time
// (0001-01-01T00:00:00Z) decode the same, so the error names both.
func TestStateZeroTime(t *testing.T) {
	st := State{LastAt: at(0), Recommendations: []TimedReplicas{{Replicas: 2}}}
	if err := st.Validate(); err == nil || !strings.Contains(err.Error(), "recommendations[0].at: missing or 0001-01-01T00:00:00Z, the zero time") {
		t.Errorf("got %v, want the zero time named", err)
	}
}
