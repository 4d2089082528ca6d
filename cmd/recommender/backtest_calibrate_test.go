package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/replica"
	"github.com/infscale/infscale/pkg/synthweek/synthweektest"
)

// TestBacktestCalibrate: `backtest --calibrate FILE` on a history written
// from known parameters (the reference replica plus a 2 ms step overhead,
// 150 us per sequence, 50 ms of request overhead and half its MFU; the
// arithmetic is pkg/backtest's calibrate_test.go's) writes a calibration
// file `gpu` takes and that holds those parameters, reports the held-out
// error, and replays with it.
func TestBacktestCalibrate(t *testing.T) {
	if testing.Short() {
		t.Skip("starts Prometheus on a backfilled history")
	}
	srv, truth := synthweektest.ServeReplica(t, synthweektest.Replica{
		Windows: 120, Window: 2 * time.Minute, QueuedEvery: 5,
		Step: func(b, ctx int) float64 { return 0.0088230 + float64(b)*(150e-6+float64(ctx)*131072/2.345e12) },
		TTFT: func(p int) float64 { return 0.050 + float64(p)/12375 },
	})
	path := filepath.Join(t.TempDir(), "chat.json")
	args := []string{"backtest", "--prometheus-url", srv.URL, "--selector", `{namespace="llm"}`,
		"--start", truth.Start.Format(time.RFC3339), "--end", truth.End.Format(time.RFC3339), "--step", "1m",
		"--policy", "fixed:2", "--policy", "recommended", "--calibrate", path}
	var out, errb bytes.Buffer
	if code := run(context.Background(), args, nil, &out, &errb); code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	t.Log(out.String())
	// The legend names the replica the replay ran on, the calibrated one,
	// not the reference replica: the fit changes speeds, not the cold
	// start (45 s image + 16 GB at 1 GB/s + 30 s warm-up = 91 s), so
	// recommended is the reference's string at the default 2 s SLO.
	legend := "recommended: infscale's preset policy, demand:0.9,lookahead=136,downwindow=60,hold=182,rampbound=0.26,ttft:2,queuewait:0.4 on the replica calibrated to this history (" + path +
		") (lookahead, hold and rampbound follow this replica's cold start of 91 s, ttft and queuewait the 2 s SLO, as on the reference replica; causal: it sees only the past, as serve does)."
	for _, want := range []string{"calibration written to " + path, "held out: ITL mean |error| 0.0% over 12 decode points, TTFT mean |error| 0.0% over 4 prompt lengths", "fixed:2", legend} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q", want)
		}
	}
	cal, err := replica.LoadCalibration(path)
	if err != nil {
		t.Fatal(err)
	}
	// The source is the command as typed: the replica flags a replica it
	// is applied to needs are in it.
	if want := "infscale backtest --prometheus-url " + srv.URL + ` --selector '{namespace="llm"}' --start `; !strings.HasPrefix(cal.Source, want) {
		t.Errorf("source %q, want it to begin %q", cal.Source, want)
	}
	for _, c := range []struct {
		what      string
		got, want float64
	}{{"step_overhead_s", cal.StepOverheadS, 0.002}, {"sequence_step_cost_s", cal.SequenceStepCostS, 150e-6}, {"request_overhead_s", cal.RequestOverheadS, 0.050}, {"mfu", cal.MFU, 0.2}} {
		if math.Abs(c.got-c.want) > 0.01*c.want {
			t.Errorf("%s = %g, want %g within 1%%", c.what, c.got, c.want)
		}
	}
	// gpu takes the file: the TTFT floor is the fitted overhead.
	out.Reset()
	errb.Reset()
	if code := run(context.Background(), []string{"gpu", "--calibration", path}, nil, &out, &errb); code != exitOK || !strings.Contains(out.String(), "request overhead 50.0 ms") {
		t.Errorf("gpu --calibration: exit %d\n%s%s", code, out.String(), errb.String())
	}
	// JSON carries the fit and its held-out error.
	out.Reset()
	errb.Reset()
	if code := run(context.Background(), append(args, "--output", "json"), nil, &out, &errb); code != exitOK {
		t.Fatalf("json: exit %d\n%s", code, errb.String())
	}
	var rep struct {
		Calibration *struct {
			File       string  `json:"file"`
			HeldOutITL float64 `json:"held_out_itl_mean_abs_error"`
			Decode     int     `json:"decode_windows"`
		} `json:"calibration"`
	}
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Calibration == nil || rep.Calibration.File != path || rep.Calibration.HeldOutITL > 0.01 {
		t.Errorf("json calibration %+v, %v", rep.Calibration, err)
	}
	// --calibrate with --calibration is refused before any query.
	out.Reset()
	errb.Reset()
	if code := run(context.Background(), append(args, "--calibration", path), nil, &out, &errb); code != exitInvalid || !strings.Contains(errb.String(), "give one of them") {
		t.Errorf("--calibrate --calibration: exit %d, %s", code, errb.String())
	}
}

// TestRedactArgs: backtest --calibrate's source is its command line with
// the Prometheus URL's password hidden, in either spelling of the flag;
// an argument that only equals the URL elsewhere is left as typed.
func TestRedactArgs(t *testing.T) {
	const secret, shown = "http://u:pw@prom:9090", "http://u:xxxxx@prom:9090"
	args := []string{"backtest", "--prometheus-url", secret, "--calibrated", "--prometheus-url=" + secret, "--selector", secret}
	got := commandLine(redactArgs(args, "prometheus-url", secret, shown))
	want := "infscale backtest --prometheus-url http://u:xxxxx@prom:9090 --calibrated --prometheus-url=http://u:xxxxx@prom:9090 --selector http://u:pw@prom:9090"
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if args[2] != secret {
		t.Error("the arguments themselves were changed")
	}
}
