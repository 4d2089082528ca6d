package replay

import (
	"bytes"
	"context"
	"encoding/csv"
	"slices"
	"testing"

	"github.com/infscale/infscale/pkg/trace"
)

// TestTimelineReason: the timeline says why each count was decided, for the
// policies that decide through pkg/recommend, and nothing for the others.
// Worked from the HPA's algorithm: queue:100000 started warm on 2 replicas
// (as if it had asked for 2 until second 0) under steady traffic of a few
// dozen requests recommends ceil(queue / 100000) = 1; the HPA's default
// scaleDown window (300 s) holds the 2 it asked for at second 0 until that
// recommendation leaves the window, then 1, as the metric asks.
func TestTimelineReason(t *testing.T) {
	src, err := trace.Parse("synthetic:poisson,rate=5,duration=10m", trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Model: referenceModel(t), Timeline: true, Initial: 2}
	pol, err := ParsePolicy("queue:100000")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), src, pol, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Timeline) < 30 {
		t.Fatalf("timeline of %d rows", len(res.Timeline))
	}
	for _, s := range res.Timeline {
		switch {
		case s.T > 0 && s.T < 300:
			if s.Desired != 2 || s.Reason != "ScaleDownStabilized" || s.Metric != "queue" {
				t.Fatalf("at %v s: desired %d reason %q metric %q, want 2 ScaleDownStabilized queue", s.T, s.Desired, s.Reason, s.Metric)
			}
		case s.T > 300:
			if s.Desired != 1 || s.Reason != "DesiredWithinRange" || s.Metric != "queue" {
				t.Fatalf("at %v s: desired %d reason %q metric %q, want 1 DesiredWithinRange queue", s.T, s.Desired, s.Reason, s.Metric)
			}
		}
	}

	fix, err := ParsePolicy("fixed:2")
	if err != nil {
		t.Fatal(err)
	}
	res2, err := Run(context.Background(), src, fix, cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range res2.Timeline {
		if s.Reason != "" || s.Metric != "" {
			t.Fatalf("fixed:2 at %v s: reason %q metric %q, want none", s.T, s.Reason, s.Metric)
		}
	}

	// JSON leaves them out when empty; CSV has both columns.
	row := NewRow(res2, 1, 1, true)
	if e := row.Timeline[0]; e.Reason != "" || e.Metric != "" {
		t.Errorf("fixed:2 row: %+v", e)
	}
	var b bytes.Buffer
	if err := WriteTimelineCSV(&b, []Result{res}); err != nil {
		t.Fatal(err)
	}
	recs, err := csv.NewReader(&b).ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	if h := recs[0]; !slices.Equal(h[len(h)-2:], []string{"reason", "metric"}) {
		t.Errorf("CSV header %v: want reason, metric last", h)
	}
	if r := recs[len(recs)-1]; r[len(r)-2] != "DesiredWithinRange" || r[len(r)-1] != "queue" {
		t.Errorf("CSV last row %v: want DesiredWithinRange, queue", r)
	}
}
