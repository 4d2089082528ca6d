package replay

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/infscale/infscale/pkg/trace"
)

// TestBacklogShed: a policy that never starts a replica (fixed:0) holds
// every request; with the bound lowered to 100, the first 100 of 250
// requests (one every 0.1 s) are held and the 150 arriving from t = 10 s
// (the 101st) are shed: all 250 unserved, all missed, 150 shed, and the
// warning says so. Before, the queue grew with the trace: 35 bytes a
// request, 24 GB in 37 s on a 30-day synthetic trace at 5,000 req/s.
func TestBacklogShed(t *testing.T) {
	defer func(m int64) { maxBacklog = m }(maxBacklog)
	maxBacklog = 100
	var b strings.Builder
	b.WriteString(trace.GenericHeader + "\n")
	for i := range 250 {
		fmt.Fprintf(&b, "%g,320,256\n", float64(i)/10)
	}
	path := filepath.Join(t.TempDir(), "t.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := trace.Parse("csv:"+path, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := ParsePolicy("fixed:0")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), src, pol, Config{Model: referenceModel(t)})
	if err != nil {
		t.Fatal(err)
	}
	if res.Requests != 250 || res.Unserved != 250 || res.Misses() != 250 || res.Shed != 150 || res.FirstShed != 10 {
		t.Errorf("requests %d, unserved %d, misses %d, shed %d from %g s; want 250, 250, 250, 150 from 10 s", res.Requests, res.Unserved, res.Misses(), res.Shed, res.FirstShed)
	}
	if w := res.ShedWarning(); !strings.Contains(w, "100 requests were in the system") || !strings.Contains(w, "from t=10s: 150 later arrivals (60.0% of the trace)") {
		t.Errorf("warning %q: want the bound, the time and the count", w)
	}
}
