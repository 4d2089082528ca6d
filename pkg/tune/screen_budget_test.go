package tune

import (
	"strings"
	"testing"

	"github.com/infscale/infscale/internal/membudget"
)

// TestWindowsFit: the screening windows were read into memory whatever
// they held (4 hours of a dense trace: 16 bytes a request, 43 million
// requests at 3,000 req/s, 0.7 GB). Their count is known from the first
// pass, so a sample that would not fit the memory budget is refused before
// the read. By hand: 1,000,000 requests x 16 bytes = 15.26 MiB; under a
// 64 MiB limit with 20 MiB used the budget is 64 - 20 - (8 + 12) = 24 MiB
// (membudget.Headroom: an eighth plus 12 MiB): admitted; with 45 MiB
// used, 64 - 45 - 20 < 0, none: refused.
func TestWindowsFit(t *testing.T) {
	const mib = 1 << 20
	if err := windowsFit("t", 1_000_000, 4, 3600, membudget.Of(64*mib, 20*mib)); err != nil {
		t.Errorf("15.3 MiB within a 24 MiB budget: %v", err)
	}
	err := windowsFit("t", 1_000_000, 4, 3600, membudget.Of(64*mib, 45*mib))
	want := "t: the 4 screening windows of 3600s hold 1000000 requests, 15.3 MiB in memory, more than the 0.0 MiB this process may still take (memory limit 64.0 MiB): replay a lower rate"
	if err == nil || !strings.HasPrefix(err.Error(), want) {
		t.Errorf("error %v, want %q...", err, want)
	}
	if err := windowsFit("t", 1<<40, 4, 3600, membudget.Of(0, 0)); err != nil {
		t.Errorf("no memory limit: %v, want the windows admitted", err)
	}
}
