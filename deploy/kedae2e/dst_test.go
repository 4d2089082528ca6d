package kedae2e

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/kedacore/keda/v2/pkg/scalers"
	"github.com/kedacore/keda/v2/pkg/scalers/scalersconfig"
)

// kedaActive runs KEDA's own cron scaler (v2.21.0) for a trigger (zone,
// start, end) at each instant, in order: KEDA reads time.Now, which a
// synctest bubble's fake clock sets by sleeping to the instant.
func kedaActive(t *testing.T, zone, start, end string, at []time.Time) []bool {
	t.Helper()
	out := make([]bool, len(at))
	synctest.Test(t, func(t *testing.T) {
		s, err := scalers.NewCronScaler(&scalersconfig.ScalerConfig{
			TriggerMetadata: map[string]string{"timezone": zone, "start": start, "end": end, "desiredReplicas": "3"},
			TriggerType:     "cron", ScalableObjectName: "chat", ScalableObjectNamespace: "llm", ScalableObjectType: "ScaledObject",
		})
		if err != nil {
			t.Fatal(err)
		}
		for i, a := range at {
			time.Sleep(a.Sub(time.Now()))
			if !time.Now().Equal(a) {
				t.Fatalf("fake clock at %v, want %v", time.Now(), a)
			}
			_, active, err := s.GetMetricsAndActivity(context.Background(), "s0-cron")
			if err != nil {
				t.Fatal(err)
			}
			out[i] = active
		}
	})
	return out
}

// The spans pkg/seasonal's Window.DSTDays reports (profile's note), on
// KEDA's own scaler: KEDA's cron trigger for a window (start and end crons
// in the zone) differs from serve's schedule (open from the first reading
// of its start, the jump in a gap, to the last reading of its end) when a
// DST change skips the start or end hour or repeats the start hour, when a
// 2 h repeat (Troll) holds the end's first hour, and after a change that
// is not a whole hour (Lord Howe), robfig/cron then walking off the hour.
// Expectations are worked from the tz rules (pkg/seasonal
// TestWindowDSTDays has robfig's steps): Europe/Berlin springs forward on
// 2027-03-28 at 01:00 UTC (02:00 CET -> 03:00 CEST) and falls back on
// 2026-10-25 at 01:00 UTC (03:00 CEST -> 02:00 CET); America/New_York
// falls back on 2026-11-01 at 06:00 UTC (02:00 EDT -> 01:00 EST);
// Antarctica/Troll falls back on 2026-10-25 at 01:00 UTC (03:00 +02 ->
// 01:00 +00) and springs forward on 2027-03-28 at 01:00 UTC (01:00 +00 ->
// 03:00 +02); Australia/Lord_Howe springs forward on 2026-10-04 at 15:30
// UTC the day before (02:00 +1030 -> 02:30 +11) and falls back on
// 2027-04-04 at 15:00 UTC the day before (02:00 +11 -> 01:30 +1030).
func TestKEDACronScalerOnDSTDays(t *testing.T) {
	utc := func(s string) time.Time {
		v, err := time.Parse(time.RFC3339, s)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, tc := range []struct {
		name, zone, start, end string
		at                     []string
		want                   []bool
	}{
		// A skipped start: KEDA's next start is the next week's, after
		// this week's end, so it holds the floor from the week before's
		// end (06:00 CET on 2027-03-21) to 06:00 CEST (serve: 03:00 CEST
		// to 08:00... 06:00 CEST).
		{"start skipped", "Europe/Berlin", "0 2 * * 0", "0 6 * * 0",
			[]string{"2027-03-21T04:30:00Z", "2027-03-21T05:30:00Z", "2027-03-24T12:00:00Z", "2027-03-28T00:30:00Z", "2027-03-28T03:30:00Z", "2027-03-28T04:30:00Z"},
			[]bool{true, true, true, true, true, false}},
		// A skipped end: KEDA's next end is the next week's, after the
		// next start, so it does not open (serve: 00:00 CET to the jump,
		// 03:00 CEST).
		{"end skipped", "Europe/Berlin", "0 0 * * 0", "0 2 * * 0",
			[]string{"2027-03-20T23:30:00Z", "2027-03-27T23:30:00Z", "2027-03-28T00:30:00Z", "2027-03-30T12:00:00Z", "2027-04-03T22:30:00Z"},
			[]bool{true, false, false, false, true}},
		// A repeated start: KEDA opens at the second reading, 02:00 CET
		// (01:00 UTC), an hour after serve.
		{"start repeated", "Europe/Berlin", "0 2 * * 0", "0 6 * * 0",
			[]string{"2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z", "2026-10-25T04:59:00Z", "2026-10-25T05:01:00Z"},
			[]bool{false, true, true, false}},
		// A repeated end: open to its last reading, 02:00 CET (01:00 UTC),
		// as serve.
		{"end repeated", "Europe/Berlin", "0 0 * * 0", "0 2 * * 0",
			[]string{"2026-10-24T22:30:00Z", "2026-10-25T00:30:00Z", "2026-10-25T00:59:00Z", "2026-10-25T01:01:00Z"},
			[]bool{true, true, true, false}},
		// An end at the repeated hour's start, 01:00 in New York: open to
		// its last reading, 01:00 EST (06:00 UTC), as serve.
		{"end at the repeat's start", "America/New_York", "0 0 * * 0", "0 1 * * 0",
			[]string{"2026-11-01T04:30:00Z", "2026-11-01T05:30:00Z", "2026-11-01T05:59:00Z", "2026-11-01T06:01:00Z"},
			[]bool{true, true, true, false}},
		// A change inside: the wall clock, as serve (00:00 CET to 06:00
		// CEST; 00:00 EDT to 06:00 EST).
		{"spring-forward inside", "Europe/Berlin", "0 0 * * 0", "0 6 * * 0",
			[]string{"2027-03-27T23:30:00Z", "2027-03-28T03:59:00Z", "2027-03-28T04:01:00Z"},
			[]bool{true, true, false}},
		{"fall-back inside", "America/New_York", "0 0 * * 0", "0 6 * * 0",
			[]string{"2026-11-01T04:30:00Z", "2026-11-01T10:59:00Z", "2026-11-01T11:01:00Z"},
			[]bool{true, true, false}},
		// Lord Howe's 30-min change: robfig/cron v3.0.1, looking from before the change, walks
		// the hours by adding one, lands on :30 after it and misses every
		// whole hour after it that day. A start at 02:00 (skipped) is not
		// held from the week before: KEDA opens at 03:00 +11 (serve at the
		// jump, 02:30 +11).
		{"start skipped (30 min)", "Australia/Lord_Howe", "0 2 * * 0", "0 6 * * 0",
			[]string{"2026-09-26T20:00:00Z", "2026-10-03T15:45:00Z", "2026-10-03T16:30:00Z", "2026-10-03T19:01:00Z"},
			[]bool{false, false, true, false}},
		// Sunday 20:00 to Monday 00:00, untouched by the change on the
		// clock: KEDA's next start, read from before the change, is the
		// week after's, so it holds the floor from 2026-09-28 00:00 to the
		// change (03:00 +11 on 2026-10-04 reads it again); serve: closed.
		{"start after a 30-min change", "Australia/Lord_Howe", "0 20 * * 0", "0 0 * * 1",
			[]string{"2026-09-27T14:00:00Z", "2026-10-02T12:00:00Z", "2026-10-03T16:30:00Z", "2026-10-04T09:30:00Z"},
			[]bool{true, true, false, true}},
		// The same at the fall-back: from 2027-03-29 00:00 +11 (13:00 UTC
		// the day before) to 02:00 +1030 (15:30 UTC), the first whole hour
		// after the change (01:40 +1030 is after it).
		{"start after a 30-min fall-back", "Australia/Lord_Howe", "0 20 * * 0", "0 0 * * 1",
			[]string{"2027-03-28T12:59:00Z", "2027-03-28T13:30:00Z", "2027-04-03T15:10:00Z", "2027-04-03T15:31:00Z", "2027-04-04T09:31:00Z"},
			[]bool{true, true, true, false, true}},
		// Troll's 2 h repeat, an end at its first hour (01:00, read at
		// 23:00 and 01:00 UTC): from 02:00 +02 (00:00 UTC) robfig's
		// time.Date(02:00) is 02:00 +00, past 01:00 +00: KEDA closes at
		// 00:00 UTC, an hour before serve (01:00 UTC).
		{"end repeated (2 h)", "Antarctica/Troll", "0 0 * * 0", "0 1 * * 0",
			[]string{"2026-10-24T22:30:00Z", "2026-10-24T23:30:00Z", "2026-10-24T23:59:00Z", "2026-10-25T00:01:00Z", "2026-10-25T00:59:00Z"},
			[]bool{true, true, true, false, false}},
		// A start there: from 01:xx +02 its next end is time.Date(01:00) =
		// 01:00 +00 plus an hour, 02:00 UTC, after its next start (01:00
		// UTC): closed; from 02:00 +02 (00:00 UTC) open to 02:00 UTC (serve:
		// from 23:00 UTC).
		{"start repeated (2 h)", "Antarctica/Troll", "0 1 * * 0", "0 2 * * 0",
			[]string{"2026-10-24T23:30:00Z", "2026-10-25T00:01:00Z", "2026-10-25T01:30:00Z", "2026-10-25T02:01:00Z"},
			[]bool{false, true, true, false}},
		// A start at its second hour (02:00, read at 00:00 and 02:00 UTC):
		// from 01:xx +02 the next start is 01:00 +00 plus an hour, 02:00
		// UTC: KEDA opens at the second reading (serve: the first).
		{"start at the second hour of a 2 h repeat", "Antarctica/Troll", "0 2 * * 0", "0 6 * * 0",
			[]string{"2026-10-25T00:30:00Z", "2026-10-25T01:30:00Z", "2026-10-25T02:01:00Z", "2026-10-25T05:59:00Z", "2026-10-25T06:01:00Z"},
			[]bool{false, false, true, true, false}},
		// A start in Troll's 2 h gap: held from the week before's end
		// (06:00 UTC) to 06:00 +02 (04:00 UTC), as Berlin's.
		{"start skipped (2 h)", "Antarctica/Troll", "0 2 * * 0", "0 6 * * 0",
			[]string{"2027-03-21T01:59:00Z", "2027-03-21T06:01:00Z", "2027-03-28T00:30:00Z", "2027-03-28T03:59:00Z", "2027-03-28T04:01:00Z"},
			[]bool{false, true, true, true, false}},
	} {
		var at []time.Time
		for _, s := range tc.at {
			at = append(at, utc(s))
		}
		got := kedaActive(t, tc.zone, tc.start, tc.end, at)
		for i := range at {
			if got[i] != tc.want[i] {
				t.Errorf("%s (%s to %s in %s) at %s: KEDA active %v, want %v", tc.name, tc.start, tc.end, tc.zone, tc.at[i], got[i], tc.want[i])
			}
		}
	}
}
