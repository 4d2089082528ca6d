package backtest

import (
	"context"
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/pkg/modelserver"
	"github.com/infscale/infscale/pkg/promql"
)

// fuzzAPI answers range queries as fakeAPI and instant ones from its
// own map.
type fuzzAPI struct {
	fakeAPI
	instants map[string]model.Vector
}

func (f fuzzAPI) Instant(_ context.Context, q string, _ time.Time) (model.Vector, []string, error) {
	return f.instants[q], nil, nil
}

// fuzzValue maps a byte to a sample value: small counts mostly, and the
// garbage Prometheus may hold (NaN, ±Inf, negatives, 1e300).
func fuzzValue(b byte, scale float64) float64 {
	switch b {
	case 255:
		return math.NaN()
	case 254:
		return math.Inf(1)
	case 253:
		return math.Inf(-1)
	case 252:
		return -1
	case 251:
		return 1e300
	case 250:
		return -0.5
	}
	return float64(b) * scale
}

// FuzzFetch: any values Prometheus holds for a target's history queries
// (counters, gauges, means, replicas, hourly TTFT) are either refused by
// Fetch or Reconstruct with an error, or a workload a replay can run on:
// arrivals and requests finite and >= 0, token lengths of at least 1,
// replicas finite and >= 0 (or unknown), hourly TTFTs finite and >= 0 (or
// unknown).
func FuzzFetch(f *testing.F) {
	f.Add([]byte{1, 0, 10, 20, 30, 40, 50, 60, 2, 3, 2, 1, 0, 1, 2, 2, 2, 2, 3, 3, 100, 100, 50, 50, 1, 1}, uint8(6), false)
	f.Add([]byte{3, 0, 255, 20, 254, 40, 252, 60, 2, 251, 2, 1, 250, 1, 2}, uint8(4), true)
	long := []byte{0}
	for i := range 120 {
		long = append(long, byte(i%7+1))
	}
	f.Add(long, uint8(4), false)
	f.Fuzz(func(t *testing.T, data []byte, n uint8, stampsGarbage bool) {
		ms, _ := promql.ParseSelector(`{namespace="llm"}`)
		g := Grid{Start: t0, Step: time.Minute, N: int(n%12) + 2}
		tgt := Target{Server: modelserver.VLLM, Selector: ms, Replicas: `kube_deployment_spec_replicas`}
		q, err := buildQueries(tgt.Server, ms, g.End().Sub(g.Start), tgt.Replicas)
		if err != nil {
			t.Fatal(err)
		}
		scale := 1.0
		if len(data) > 0 {
			scale = []float64{1, 0.5, 10, 1000}[data[0]%4]
			data = data[1:]
		}
		next := func() (byte, bool) {
			if len(data) == 0 {
				return 0, false
			}
			b := data[0]
			data = data[1:]
			return b, true
		}
		series := func(cumulative bool) model.Matrix {
			ss := &model.SampleStream{Metric: model.Metric{"pod": "a"}}
			acc := 0.0
			for i := 0; i <= g.N; i++ {
				b, ok := next()
				if !ok {
					break
				}
				v := fuzzValue(b, scale)
				if cumulative && b < 250 {
					acc += v
					v = acc
				}
				ss.Values = append(ss.Values, model.SamplePair{Timestamp: model.TimeFromUnix(g.At(i).Unix()), Value: model.SampleValue(v)})
			}
			if len(ss.Values) == 0 {
				return nil
			}
			return model.Matrix{ss}
		}
		ranges := map[string]model.Matrix{}
		ranges[q.Success] = series(true)
		stamps := model.Matrix{}
		for _, ss := range ranges[q.Success] {
			c := &model.SampleStream{Metric: ss.Metric}
			for _, p := range ss.Values {
				c.Values = append(c.Values, model.SamplePair{Timestamp: p.Timestamp, Value: model.SampleValue(p.Timestamp.Unix())})
			}
			stamps = append(stamps, c)
		}
		if stampsGarbage {
			stamps = series(false)
		}
		ranges[q.SuccessTimestamps] = stamps
		for _, k := range []string{q.Running, q.Waiting, q.Replicas, q.TTFTHourly} {
			if k != "" {
				ranges[k] = series(false)
			}
		}
		debug := os.Getenv("FUZZFETCH_DEBUG") != ""
		instants := map[string]model.Vector{}
		for _, k := range []string{q.PromptHist, q.OutputHist, q.TTFTHist} {
			var v model.Vector
			acc := 0.0
			for _, le := range []string{"1", "10", "100", "+Inf"} {
				b, ok := next()
				if !ok {
					break
				}
				x := fuzzValue(b, scale)
				if b < 250 {
					acc += x
					x = acc
				}
				v = append(v, &model.Sample{Metric: model.Metric{"le": model.LabelValue(le)}, Value: model.SampleValue(x)})
			}
			instants[k] = v
		}
		for _, k := range []string{q.PromptMean, q.OutputMean} {
			if b, ok := next(); ok {
				instants[k] = model.Vector{{Metric: model.Metric{}, Value: model.SampleValue(fuzzValue(b, scale))}}
			}
		}
		h, _, err := Fetch(context.Background(), fuzzAPI{fakeAPI{ranges: ranges}, instants}, tgt, g, nil)
		if err != nil {
			if debug {
				t.Logf("fetch: %v", err)
			}
			return
		}
		w, err := Reconstruct(h, Options{})
		if err != nil {
			if debug {
				t.Logf("reconstruct: %v", err)
			}
			return
		}
		bad := func(what string, v float64, unknownOK bool) {
			if unknownOK && math.IsNaN(v) {
				return
			}
			if !(v >= 0) || math.IsInf(v, 0) {
				t.Fatalf("%s = %v (history %+v)", what, v, h)
			}
		}
		for i, v := range w.Arrivals {
			bad("arrivals["+strconv.Itoa(i)+"]", v, false)
		}
		bad("requests", w.Requests, false)
		for i, v := range w.Replicas {
			bad("replicas["+strconv.Itoa(i)+"]", v, true)
		}
		for _, hv := range w.TTFTHourly {
			bad("hourly TTFT", hv.V, true)
		}
		if debug {
			t.Logf("workload: %d requests", int(w.Requests))
		}
		rng := rand.New(rand.NewPCG(1, 2))
		for range 20 {
			if p, o := w.Prompt.Draw(rng), w.Output.Draw(rng); p < 1 || o < 1 {
				t.Fatalf("drew prompt %d output %d from %+v %+v", p, o, w.Prompt, w.Output)
			}
		}
	})
}
