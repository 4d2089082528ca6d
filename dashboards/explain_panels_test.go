package dashboards

import (
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/recommend"
)

// reversalMinutes is the reversal window the "Scale changes and reversals"
// panel states.
var reversalMinutes = regexp.MustCompile(`less than (\d+) minutes before`)

// TestReversalPanelStatesTheWindow: the panel's description gives the
// window infscale_scale_reversals_total counts a reversal within,
// recommend.ReversalWindow (docs/metrics.md: 300 s). It said 10 minutes.
func TestReversalPanelStatesTheWindow(t *testing.T) {
	found := false
	for _, d := range loadDashboards(t) {
		for _, pn := range d.Panels {
			if pn.Title != "Scale changes and reversals" {
				continue
			}
			found = true
			m := reversalMinutes.FindStringSubmatch(pn.Description)
			if m == nil {
				t.Fatalf("panel %q: description %q does not say the window (\"less than N minutes before\")", pn.Title, pn.Description)
			}
			n, _ := strconv.Atoi(m[1])
			if got := time.Duration(n) * time.Minute; got != recommend.ReversalWindow {
				t.Errorf("panel %q says %v, want recommend.ReversalWindow %v (docs/metrics.md: 300 s)", pn.Title, got, recommend.ReversalWindow)
			}
		}
	}
	if !found {
		t.Fatal("no panel Scale changes and reversals")
	}
}
