// Package synthweektest (a test harness) serves synthetic metrics (package synthweek's week,
// or this package's Replica, the calibration series only tests write) from
// the pinned real Prometheus for tests. It is apart from package synthweek
// so that the infscale binary, which writes weeks, links neither the
// testing package nor internal/promtest.
package synthweektest

import (
	"bufio"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/infscale/infscale/internal/promtest"
	"github.com/infscale/infscale/pkg/replica"
	"github.com/infscale/infscale/pkg/synthweek"
)

// Serve writes the history for cfg, loads it into a TSDB with the pinned
// promtool (`tsdb create-blocks-from openmetrics`, blocks of up to 54 h so
// that promtool parses the file a few times rather than once per 2-hour
// block), and starts the pinned Prometheus on it with a 10-year retention
// (retention counts from the newest block, and the history is in the
// past). Query it over [Truth.Start, Truth.End] explicitly. It skips the
// test when the binaries are unavailable (fails under CI=true).
func Serve(t testing.TB, cfg synthweek.Config) (*promtest.Server, synthweek.Truth) {
	t.Helper()
	var tr synthweek.Truth
	srv := serve(t, func(w io.Writer) (err error) {
		tr, err = synthweek.Write(w, cfg)
		return err
	})
	return srv, tr
}

// ServeReplica is Serve for a Replica.
func ServeReplica(t testing.TB, cfg Replica) (*promtest.Server, ReplicaTruth) {
	t.Helper()
	var tr ReplicaTruth
	srv := serve(t, func(w io.Writer) (err error) {
		tr, err = WriteReplica(w, cfg)
		return err
	})
	return srv, tr
}

// serve writes a history with write, loads it into a TSDB and starts
// Prometheus on it (Serve's steps).
func serve(t testing.TB, write func(io.Writer) error) *promtest.Server {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, "history.om")
	f, err := os.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	bw := bufio.NewWriter(f)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	data := promtest.CreateBlocks(t, in, "--quiet", "--max-block-duration=54h")
	os.Remove(in)
	return promtest.Start(t, promtest.Options{DataDir: data, Flags: []string{"--storage.tsdb.retention.time=10y"}})
}

// CheckWeekCalibration fails t unless cal, fitted from a week synthweek.Write wrote,
// gives WeekReplica back within the tolerances docs/evaluation/ACCURACY.md holds the
// noisy Prometheus-history fit to: step overhead 0.25 ms, per-sequence
// cost 10 us, request overhead 3 ms, MFU 0.01.
func CheckWeekCalibration(t testing.TB, cal replica.Calibration) {
	t.Helper()
	w := synthweek.WeekReplica()
	for _, c := range []struct {
		what           string
		got, want, tol float64
	}{
		{"step_overhead_s", cal.StepOverheadS, w.StepOverhead.Seconds(), 0.00025},
		{"sequence_step_cost_s", cal.SequenceStepCostS, w.SequenceStepCost.Seconds(), 10e-6},
		{"request_overhead_s", cal.RequestOverheadS, w.RequestOverhead.Seconds(), 0.003},
		{"mfu", cal.MFU, w.MFU, 0.01},
	} {
		if math.Abs(c.got-c.want) > c.tol {
			t.Errorf("%s = %.6g, want %.6g within %.2g", c.what, c.got, c.want, c.tol)
		} else {
			t.Logf("%s = %.6g (truth %.6g)", c.what, c.got, c.want)
		}
	}
}
