package backtest

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/replay"
)

// TestNoFidelitySaysWhy: the report without a fidelity line says which of
// its inputs was missing. The reproduced incident's window, 22:44:10 to
// 22:47:20 (3m10s), had the replicas and the TTFT histogram (its actual
// rows read p95 7.67 s) and said "needs the replicas timeline and the TTFT
// histogram": the hourly p95 is not read under an hour (fetch.go).
func TestNoFidelitySaysWhy(t *testing.T) {
	start := time.Date(2026, 12, 7, 22, 44, 10, 0, time.UTC)
	nan := math.NaN()
	sim := &replay.Result{}
	for _, c := range []struct {
		name   string
		span   time.Duration
		sim    *replay.Result
		hourly []HourValue
		want   string
	}{
		{"under an hour", 3*time.Minute + 10*time.Second, sim, nil,
			"fidelity  not available (it compares the observed and the simulated TTFT p95 hour by hour, and the range is 3m10s: give --start and --end an hour or more apart)"},
		{"no replicas", 2 * time.Hour, nil, []HourValue{{T: start.Add(time.Hour), V: 0.5}},
			"fidelity  not available (needs the replicas timeline: the replicas that ran were not read, a warning below says why)"},
		{"no TTFT", 2 * time.Hour, sim, []HourValue{{T: start.Add(time.Hour), V: nan}, {T: start.Add(2 * time.Hour), V: nan}},
			"fidelity  not available (needs the TTFT histogram: no hour of the range has an observed TTFT p95)"},
		{"no overlap", 2 * time.Hour, sim, []HourValue{{T: start.Add(time.Hour), V: 0.5}},
			"fidelity  not available (no hour of the range has both an observed TTFT p95 and requests in the replay)"},
	} {
		rep := Report{Start: start, End: start.Add(c.span), SLOTTFT: 2, Actual: Actual{ReplicaMinutes: nan, Peak: nan, TTFTP95: nan, Simulated: c.sim}, TTFTHourly: c.hourly}
		var b bytes.Buffer
		if err := rep.WriteText(&b); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), c.want+"\n") {
			t.Errorf("%s: want the line %q in:\n%s", c.name, c.want, b.String())
		}
	}
}
