package serve

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/internal/promtest"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/promql"
	"github.com/infscale/infscale/pkg/recommend"
)

// TestRebuildOwnInstallation: two installations one Prometheus scrapes,
// both with a target chat, their series told apart by the labels the
// ServiceMonitor gives them (namespace, service). Over the 4 minutes
// before the restart (samples every 15 s from now-240s to now-15s) this
// one (namespace infscale) decided 2 for a minute and 3 from now-180s,
// its raw recommendation 2 then 3 alike; staging's decided 7 throughout.
// A restart without --state-dir with prometheus.series_labels rebuilds its
// own: last desired 3, one scale-up of 1 at now-180s, recommendations 2 at
// the first four steps and 3 after. The range query's steps run from
// now-240s to now, the one at now reading now-15s's sample (inside
// Prometheus's 5-minute lookback): 17 points, the last at now. With target alone (no series_labels,
// the query before) it rebuilt max of both: desired 7 and no event, a
// decision it never made, held through the stabilization window.
//
// The tuned policy's revert lookup reads the same way: staging exported
// queue:8 reverted, this one queue:8 adopted. With the labels nothing is
// reverted here; with target alone staging's revert was read as this
// one's.
func TestRebuildOwnInstallation(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on backfilled series")
	}
	now := time.Now().Add(-30 * time.Hour).Truncate(time.Hour).Add(10 * time.Minute)
	own := `namespace="infscale",service="infscale",job="infscale",instance="10.0.0.1:9105"`
	other := `namespace="staging",service="staging-infscale",job="infscale",instance="10.0.1.1:9105"`
	var om strings.Builder
	for _, metric := range []string{"infscale_desired_replicas", "infscale_recommended_replicas"} {
		fmt.Fprintf(&om, "# TYPE %s gauge\n", metric)
		for at := now.Add(-240 * time.Second); at.Before(now); at = at.Add(15 * time.Second) {
			v := 3
			if at.Before(now.Add(-180 * time.Second)) {
				v = 2
			}
			fmt.Fprintf(&om, "%s{target=\"chat\",%s} %d %d\n", metric, own, v, at.Unix())
			fmt.Fprintf(&om, "%s{target=\"chat\",%s} 7 %d\n", metric, other, at.Unix())
		}
	}
	om.WriteString("# TYPE infscale_tuned_policy_info gauge\n")
	for at := now.Add(-240 * time.Second); at.Before(now); at = at.Add(15 * time.Second) {
		fmt.Fprintf(&om, "infscale_tuned_policy_info{target=\"chat\",policy=\"queue:8\",state=\"adopted\",terms=\"t1\",%s} 1 %d\n", own, at.Unix())
		fmt.Fprintf(&om, "infscale_tuned_policy_info{target=\"chat\",policy=\"queue:8\",state=\"reverted\",terms=\"t1\",%s} 1 %d\n", other, at.Unix())
	}
	om.WriteString("# EOF\n")
	prom := promtest.Start(t, promtest.Options{DataDir: promtest.Backfill(t, om.String()), Flags: []string{"--storage.tsdb.retention.time=30d"}})
	api, err := promql.NewClient(promql.ClientConfig{URL: prom.URL, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Parse([]byte(loopConfig), "loop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	chat := &cfg.Targets[0]
	at := func(s int) time.Time { return now.Add(time.Duration(s) * time.Second) }

	rb := &Rebuilder{API: api, Step: 15 * time.Second, SeriesLabels: map[string]string{"namespace": "infscale", "service": "infscale"}}
	p, err := rb.Rebuild(t.Context(), chat, now)
	if err != nil || p == nil {
		t.Fatalf("rebuild with series_labels: %v, %v", p, err)
	}
	if p.Desired != 3 || !p.SavedAt.Equal(now) {
		t.Errorf("with series_labels: desired %d at %v, want 3 at now (its own)", p.Desired, p.SavedAt)
	}
	sameEvent := func(a, b recommend.ScaleEvent) bool { return a.At.Equal(b.At) && a.Change == b.Change }
	if want := []recommend.ScaleEvent{{At: at(-180), Change: 1}}; !slices.EqualFunc(p.State.ScaleUpEvents, want, sameEvent) || len(p.State.ScaleDownEvents) != 0 {
		t.Errorf("with series_labels: scale-ups %v, downs %v; want %v and none", p.State.ScaleUpEvents, p.State.ScaleDownEvents, want)
	}
	var wantRecs []recommend.TimedReplicas
	for s := -240; s <= 0; s += 15 {
		r := 3
		if s < -180 {
			r = 2
		}
		wantRecs = append(wantRecs, recommend.TimedReplicas{At: at(s), Replicas: r})
	}
	if !slices.EqualFunc(p.State.Recommendations, wantRecs, func(a, b recommend.TimedReplicas) bool { return a.At.Equal(b.At) && a.Replicas == b.Replicas }) {
		t.Errorf("with series_labels: recommendations %v, want %v", p.State.Recommendations, wantRecs)
	}

	old, err := (&Rebuilder{API: api, Step: 15 * time.Second}).Rebuild(t.Context(), chat, now)
	if err != nil || old == nil {
		t.Fatalf("rebuild by target alone: %v, %v", old, err)
	}
	if old.Desired != 7 || len(old.State.ScaleUpEvents) != 0 {
		t.Errorf("by target alone: desired %d, scale-ups %v; want 7 (staging's, the max of both) and none", old.Desired, old.State.ScaleUpEvents)
	}

	ctx := context.Background()
	if policy, _, _, err := lastReverted(ctx, api, "chat", rb.SeriesLabels, now, 15*time.Second); err != nil || policy != "" {
		t.Errorf("revert lookup with series_labels: %q, %v; want none (this installation adopted queue:8)", policy, err)
	}
	if policy, _, _, err := lastReverted(ctx, api, "chat", nil, now, 15*time.Second); err != nil || policy != "queue:8" {
		t.Errorf("revert lookup by target alone: %q, %v; want staging's queue:8 (the query before)", policy, err)
	}
}
