package kedae2e

import (
	"context"
	"testing"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"github.com/kedacore/keda/v2/pkg/scalers"
	"github.com/kedacore/keda/v2/pkg/scalers/scalersconfig"
	"sigs.k8s.io/yaml"
)

// profileTriggers is what `infscale profile --timezone Europe/Berlin`
// printed on a synthetic week (synth-week --end 2027-03-31T00:00:00Z,
// --start 2027-03-24T00:00:00Z), as a user pastes it under a ScaledObject's
// triggers, plus one window reaching midnight on Monday to Saturday, whose
// end profile writes on the next days (pkg/seasonal Window.EndCron:
// "2-6,0", the range wrapped past Saturday).
const profileTriggers = `triggers:
  - type: cron
    metadata:
      timezone: Europe/Berlin
      start: "0 12 * * 1"
      end: "0 21 * * 1"
      desiredReplicas: "2"
  - type: cron
    metadata:
      timezone: Europe/Berlin
      start: "0 13 * * 2"
      end: "0 21 * * 2"
      desiredReplicas: "2"
  - type: cron
    metadata:
      timezone: Europe/Berlin
      start: "0 12 * * 3-4"
      end: "0 20 * * 3-4"
      desiredReplicas: "2"
  - type: cron
    metadata:
      timezone: Europe/Berlin
      start: "0 12 * * 5"
      end: "0 21 * * 5"
      desiredReplicas: "2"
  - type: cron
    metadata:
      timezone: Europe/Berlin
      start: "0 20 * * 1-6"
      end: "0 0 * * 2-6,0"
      desiredReplicas: "3"
`

// TestKEDACronScalerTakesProfileTriggers runs KEDA's own cron scaler
// (v2.21.0) on the cron triggers profile prints: KEDA accepts each
// (timezone an IANA name, start and end 5-field crons, desiredReplicas a
// string) and reports desiredReplicas, active, exactly while the wall
// clock in Berlin is inside the window profile meant (weekdays, from the
// start hour for the window's hours), else 0, inactive. KEDA reads
// time.Now, so the expectation is worked out for the moment of the run.
func TestKEDACronScalerTakesProfileTriggers(t *testing.T) {
	var doc struct {
		Triggers []kedav1alpha1.ScaleTriggers `json:"triggers"`
	}
	if err := yaml.UnmarshalStrict([]byte(profileTriggers), &doc); err != nil {
		t.Fatal(err)
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Skip(err)
	}
	// The windows as profile meant them: weekdays (Sunday 0), start hour,
	// hours, replicas.
	want := []struct {
		days        []time.Weekday
		hour, hours int
		replicas    int64
	}{
		{[]time.Weekday{1}, 12, 9, 2},
		{[]time.Weekday{2}, 13, 8, 2},
		{[]time.Weekday{3, 4}, 12, 8, 2},
		{[]time.Weekday{5}, 12, 9, 2},
		{[]time.Weekday{1, 2, 3, 4, 5, 6}, 20, 4, 3},
	}
	if len(doc.Triggers) != len(want) {
		t.Fatalf("%d triggers, want %d", len(doc.Triggers), len(want))
	}
	now := time.Now().In(berlin)
	for i, tr := range doc.Triggers {
		s, err := scalers.NewCronScaler(&scalersconfig.ScalerConfig{
			TriggerMetadata: tr.Metadata, TriggerIndex: i, TriggerType: tr.Type,
			ScalableObjectName: "chat", ScalableObjectNamespace: "llm", ScalableObjectType: "ScaledObject",
		})
		if err != nil {
			t.Errorf("trigger %d (%v): KEDA refuses it: %v", i, tr.Metadata, err)
			continue
		}
		if specs := s.GetMetricSpecForScaling(context.Background()); len(specs) != 1 {
			t.Errorf("trigger %d: %d metric specs, want 1", i, len(specs))
		}
		ms, active, err := s.GetMetricsAndActivity(context.Background(), "s0-cron")
		if err != nil || len(ms) != 1 {
			t.Errorf("trigger %d: GetMetricsAndActivity: %d values, %v", i, len(ms), err)
			continue
		}
		w := want[i]
		in := false
		for back := range 2 { // the window may have started yesterday
			d := now.AddDate(0, 0, -back)
			from := time.Date(d.Year(), d.Month(), d.Day(), w.hour, 0, 0, 0, berlin)
			to := time.Date(d.Year(), d.Month(), d.Day(), w.hour+w.hours, 0, 0, 0, berlin)
			for _, wd := range w.days {
				if d.Weekday() == wd && !now.Before(from) && now.Before(to) {
					in = true
				}
			}
		}
		wantV := int64(0)
		if in {
			wantV = w.replicas * 1000
		}
		// A minute's grace at the edges: KEDA reads its own clock.
		edge := now.Minute() == 59 || now.Minute() == 0
		if !edge && (active != in || ms[0].Value.MilliValue() != wantV) {
			t.Errorf("trigger %d at %s: KEDA reports %dm active %v; want %dm active %v", i, now.Format(time.RFC3339), ms[0].Value.MilliValue(), active, wantV, in)
		}
	}
}
