package promql

import (
	"bufio"
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/pkg/modelserver"

	"github.com/infscale/infscale/internal/sharedtest"
)

// casesDir is shared/testdata/cases, next to the repository (skips when
// absent, fails under CI=true).
func casesDir(t *testing.T) string {
	t.Helper()
	return sharedtest.Path(t, "cases")
}

// caseLines returns the JSON Lines of a case file (one API response each).
func caseLines(t *testing.T, name string) []string {
	t.Helper()
	f, err := os.Open(filepath.Join(casesDir(t), name))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	var cur strings.Builder
	for sc.Scan() {
		// Case 13's file spreads one response over several lines; a line
		// starting with {"status" begins a new response.
		line := sc.Text()
		if strings.HasPrefix(line, `{"status"`) && cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
		cur.WriteString(line)
	}
	if cur.Len() > 0 {
		out = append(out, cur.String())
	}
	return out
}

// fakeProm answers /api/v1/query with handler and counts requests.
func fakeProm(t *testing.T, handler func(w http.ResponseWriter, r *http.Request)) (*Client, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		handler(w, r)
	}))
	t.Cleanup(srv.Close)
	c, err := NewClient(ClientConfig{URL: srv.URL, Timeout: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	return c, &n
}

func reply(status int, body string) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		fmt.Fprint(w, body)
	}
}

// TestClientReasons: every way a query can fail or carry no usable number
// maps to a reason and to NaN, never to 0. Bodies of cases 01 and 02 are
// the shared fixtures (empty vector; NaN, +Inf, -Inf).
func TestClientReasons(t *testing.T) {
	empty := caseLines(t, "01-keda-empty-result-is-not-zero.json")
	nanInf := caseLines(t, "02-prometheus-nan-and-inf-values.json")
	if len(empty) != 1 || len(nanInf) != 3 {
		t.Fatalf("fixtures: %d and %d responses", len(empty), len(nanInf))
	}
	hang := func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm() // read the body so the server notices the client leaving
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}
	for _, tc := range []struct {
		name    string
		handler func(http.ResponseWriter, *http.Request)
		want    Reason
	}{
		{"case 01 empty vector", reply(200, empty[0]), ReasonEmpty},
		{"case 02 NaN", reply(200, nanInf[0]), ReasonNaN},
		{"case 02 +Inf", reply(200, nanInf[1]), ReasonNaN},
		{"case 02 -Inf", reply(200, nanInf[2]), ReasonNaN},
		{"a negative value", reply(200, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1737152900,"-3"]}]}}`), ReasonNaN},
		{"500", reply(500, "internal error"), ReasonUnavailable},
		{"502 from a proxy", reply(502, "<html>bad gateway</html>"), ReasonUnavailable},
		{"503 query timeout", reply(503, `{"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"}`), ReasonTimeout},
		{"422 execution", reply(422, `{"status":"error","errorType":"execution","error":"found duplicate series for the match group"}`), ReasonBadData},
		{"400 bad_data", reply(400, `{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:5: parse error"}`), ReasonBadData},
		{"not JSON", reply(200, `<html>login</html>`), ReasonBadResponse},
		{"hang past the timeout", hang, ReasonTimeout},
		{"duplicated series, different values", reply(200, `{"status":"success","data":{"resultType":"vector","result":[
			{"metric":{"replica":"A"},"value":[1737152900,"3"]},{"metric":{"replica":"B"},"value":[1737152900,"4"]}]}}`), ReasonAmbiguous},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := fakeProm(t, tc.handler)
			tg := Target{Name: "chat", Server: modelserver.VLLM, Overrides: map[Signal]string{Waiting: `sum(vllm:num_requests_waiting{namespace="llm",model_name="m"})`}}
			tg.Selector, _ = ParseSelector(`{namespace="llm"}`)
			ev := &Evaluator{API: c}
			start := time.Now()
			res, _ := ev.Evaluate(context.Background(), []Target{tg}, time.Unix(1737152900, 0))
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("took %s: the 300 ms timeout did not bound the cycle", d)
			}
			r := res[0]
			if got := ReasonOf(r.Errors[Waiting]); got != tc.want {
				t.Fatalf("waiting reason %v (%v), want %v", got, r.Errors[Waiting], tc.want)
			}
			if !math.IsNaN(r.Values[Waiting]) {
				t.Fatalf("waiting %v, want NaN", r.Values[Waiting])
			}
		})
	}
}

// Identical duplicates (an HA pair returning the same aggregated value
// twice) are one value, and Prometheus's warnings reach the result.
func TestClientDuplicatesAndWarnings(t *testing.T) {
	c, _ := fakeProm(t, reply(200, `{"status":"success","warnings":["PromQL warning: encountered a mix of histograms and floats"],"data":{"resultType":"vector","result":[
		{"metric":{"replica":"A"},"value":[1737152900,"7"]},{"metric":{"replica":"B"},"value":[1737152900,"7"]}]}}`))
	tg := Target{Name: "chat", Server: modelserver.VLLM, Replicas: `kube_deployment_spec_replicas{deployment="chat"}`}
	tg.Selector, _ = ParseSelector(`{namespace="llm"}`)
	res, st := (&Evaluator{API: c, BatchSize: 1}).Evaluate(context.Background(), []Target{tg}, time.Unix(1737152900, 0))
	r := res[0]
	if r.Values[Current] != 7 || r.Errors[Current] != nil {
		t.Fatalf("current %v (%v), want 7", r.Values[Current], r.Errors[Current])
	}
	if len(r.Warnings) == 0 || !strings.Contains(r.Warnings[0], "mix of histograms") {
		t.Fatalf("warnings %v", r.Warnings)
	}
	// Running, waiting, reporting, kv, current: 5 signals, one query each.
	if st.Queries != 5 {
		t.Fatalf("queries %d, want 5", st.Queries)
	}
}

// Connection refused (Prometheus down) is unavailable for every signal; the
// observation is all NaN and Current is flagged unknown.
func TestClientUnavailable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c, err := NewClient(ClientConfig{URL: url, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	tg := Target{Name: "chat", Server: modelserver.VLLM}
	tg.Selector, _ = ParseSelector(`{namespace="llm"}`)
	res, _ := (&Evaluator{API: c}).Evaluate(context.Background(), []Target{tg}, time.Now())
	r := res[0]
	for _, s := range []Signal{Running, Waiting, Reporting, KV, Current} {
		if ReasonOf(r.Errors[s]) != ReasonUnavailable {
			t.Errorf("%s: %v, want unavailable", s, r.Errors[s])
		}
	}
	o := r.Values
	if !math.IsNaN(o[Running]) || !math.IsNaN(o[Waiting]) || !math.IsNaN(o[KV]) || !math.IsNaN(o[Reporting]) || !math.IsNaN(o[Current]) {
		t.Fatalf("values %v", o)
	}
}

// A batch that Prometheus rejects (a user override failing at execution)
// is retried target by target, so only the broken target loses the signal.
// Queries: waiting, reporting, kv (one batch each), the rejected running
// batch, then 3 single running queries: 7.
func TestBatchFallbackIsolatesBrokenTarget(t *testing.T) {
	c, n := fakeProm(t, func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		q := r.Form.Get("query")
		switch {
		case strings.Contains(q, "broken_metric"):
			reply(422, `{"status":"error","errorType":"execution","error":"many-to-many matching not allowed"}`)(w, r)
		case strings.Contains(q, "label_replace"):
			t.Errorf("unexpected batch %s", q)
		default:
			reply(200, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"2"]}]}}`)(w, r)
		}
	})
	var targets []Target
	for _, name := range []string{"a", "broken", "c"} {
		tg := Target{Name: name, Server: modelserver.VLLM, Overrides: map[Signal]string{Running: `sum(ok_metric{t="` + name + `"})`}}
		if name == "broken" {
			tg.Overrides[Running] = `broken_metric + on() broken_metric`
		}
		tg.Selector, _ = ParseSelector(`{t="` + name + `"}`)
		targets = append(targets, tg)
	}
	ev := &Evaluator{API: fallbackOnly{c}}
	res, st := ev.Evaluate(context.Background(), targets, time.Unix(1, 0))
	for _, r := range res {
		broken := r.Target == "broken"
		if got := ReasonOf(r.Errors[Running]); broken != (got == ReasonBadData) {
			t.Errorf("%s: running error %v", r.Target, r.Errors[Running])
		}
		if !broken && r.Values[Running] != 2 {
			t.Errorf("%s: running %v, want 2", r.Target, r.Values[Running])
		}
	}
	if st.Queries != 7 || n.Load() != 3 {
		t.Fatalf("queries %d (server saw %d), want 7 counted (waiting, reporting, kv, the rejected batch, 3 singles) and 3 singles served", st.Queries, n.Load())
	}
}

// fallbackOnly forwards only the Running signal's queries (those the test
// is about) and rejects every batch with bad_data, as Prometheus would
// reject a batch containing the broken query.
type fallbackOnly struct{ c *Client }

func (f fallbackOnly) Instant(ctx context.Context, q string, ts time.Time) (modelVector, []string, error) {
	if strings.Contains(q, "label_replace") && strings.Contains(q, "broken_metric") {
		return nil, nil, &QueryError{Reason: ReasonBadData, Query: q}
	}
	if !strings.Contains(q, "ok_metric") && !strings.Contains(q, "broken_metric") {
		return nil, nil, &QueryError{Reason: ReasonEmpty, Query: q}
	}
	return f.c.Instant(ctx, q, ts)
}

func (f fallbackOnly) Range(ctx context.Context, q string, s, e time.Time, step time.Duration) (modelMatrix, []string, error) {
	return f.c.Range(ctx, q, s, e, step)
}

// Range splits 25,000 steps into chunks of at most 11,000 points (11,000 +
// 11,000 + 3,000) on the step grid and merges each series in time order.
func TestRangeChunks(t *testing.T) {
	var seen [][3]float64
	c, _ := fakeProm(t, func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		start, _ := strconv.ParseFloat(r.Form.Get("start"), 64)
		end, _ := strconv.ParseFloat(r.Form.Get("end"), 64)
		step, _ := strconv.ParseFloat(r.Form.Get("step"), 64)
		seen = append(seen, [3]float64{start, end, step})
		// One series with a point at start and one at end of the chunk.
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"pod":"a"},"values":[[%g,"1"],[%g,"2"]]}]}}`, start, end)
	})
	start := time.Unix(1000, 0)
	end := start.Add(24999 * 15 * time.Second) // 25,000 points at 15 s
	m, _, err := c.Range(context.Background(), "up", start, end, 15*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	// Chunk starts: 1000, 1000 + 11000*15 = 166000, 1000 + 22000*15 = 331000;
	// ends: start + 10999*15 for full chunks, the overall end 375985 last.
	want := [][3]float64{{1000, 165985, 15}, {166000, 330985, 15}, {331000, 375985, 15}}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Fatalf("chunks %v, want %v", seen, want)
	}
	if len(m) != 1 || len(m[0].Values) != 6 || m[0].Values[2].Timestamp.Unix() != 166000 {
		t.Fatalf("merged %v", m)
	}
	if _, _, err := c.Range(context.Background(), "up", end, start, time.Second); ReasonOf(err) != ReasonBadData {
		t.Fatalf("reversed range: %v", err)
	}
}

type (
	modelVector = model.Vector
	modelMatrix = model.Matrix
)

// TestOutOfRangeValues: every query of a target answered with one value v
// (a broken recording rule, a user override). A KV usage above 1 is not a
// fraction (nan); a replica or pod count above max int32 is not a
// Kubernetes count (bad_data: 1e19 would overflow an int, 1e10 decide on
// ten billion replicas); a request sum stays as large as it is up to
// 10,000 replicas x 2^20 sequences = 10,485,760,000 (1e10 is a count) and
// above it is no count (bad_data, unknown: 1e19 waiting decided the
// replica cap, where a page at a billion in one series is refused).
func TestOutOfRangeValues(t *testing.T) {
	for _, tc := range []struct {
		v       string
		kv      Reason
		current Reason
	}{{"3", ReasonNaN, 0}, {"1e10", ReasonNaN, ReasonBadData}, {"1e19", ReasonNaN, ReasonBadData}, {"0.5", 0, 0}} {
		c, _ := fakeProm(t, reply(200, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1737152900,"`+tc.v+`"]}]}}`))
		tg := Target{Name: "chat", Server: modelserver.VLLM, Replicas: `kube_deployment_spec_replicas{deployment="chat"}`}
		tg.Selector, _ = ParseSelector(`{namespace="llm"}`)
		res, _ := (&Evaluator{API: c}).Evaluate(context.Background(), []Target{tg}, time.Unix(1737152900, 0))
		r := res[0]
		if got := ReasonOf(r.Errors[KV]); got != tc.kv || (tc.kv != 0) != math.IsNaN(r.Values[KV]) {
			t.Errorf("%s: kv %v reason %v (%v), want %v", tc.v, r.Values[KV], got, r.Errors[KV], tc.kv)
		}
		if got := ReasonOf(r.Errors[Current]); got != tc.current {
			t.Errorf("%s: current %v reason %v (%v), want %v", tc.v, r.Values[Current], got, r.Errors[Current], tc.current)
		}
		if tc.current != 0 && (!math.IsNaN(r.Values[Current]) || ReasonOf(r.Errors[Reporting]) != ReasonBadData) {
			t.Errorf("%s: current %v, reporting %v: want no count from garbage", tc.v, r.Values[Current], r.Errors[Reporting])
		}
		if tc.v == "1e10" && (r.Values[Waiting] != 1e10 || r.Errors[Waiting] != nil) {
			t.Errorf("1e10: waiting %v (%v), want the count as is", r.Values[Waiting], r.Errors[Waiting])
		}
		if tc.v == "1e19" {
			for _, s := range []Signal{Running, Waiting} {
				if err := r.Errors[s]; ReasonOf(err) != ReasonBadData || !math.IsNaN(r.Values[s]) || !strings.Contains(err.Error(), "1e+19 above 10485760000 requests") {
					t.Errorf("1e19: %s %v (%v), want unknown, bad_data naming the bound 10485760000", s, r.Values[s], err)
				}
			}
		}
	}
}

// TestRangeRefusesMisshapenMatrix: a range answer whose series' samples go
// back in time, repeat a time, fall outside the range asked, or whose label
// set comes twice, is no Prometheus answer (backtest read samples in reverse
// order as a counter reset at every step: 54 million requests from an hour
// of 45,000). Each is a bad_response naming the series and the times; the
// well-formed answer passes.
func TestRangeRefusesMisshapenMatrix(t *testing.T) {
	start := time.Unix(1000, 0)
	end := start.Add(60 * time.Second)
	for _, c := range []struct {
		name, values, want string
	}{
		{"reversed", `{"metric":{"pod":"a"},"values":[[1060,"2"],[1030,"1"]]}`, `series {pod="a"}: sample at 1970-01-01T00:17:10Z after one at 1970-01-01T00:17:40Z: want samples in increasing time order`},
		{"repeated", `{"metric":{"pod":"a"},"values":[[1030,"1"],[1030,"1"]]}`, `sample at 1970-01-01T00:17:10Z after one at 1970-01-01T00:17:10Z`},
		{"outside", `{"metric":{"pod":"a"},"values":[[1030,"1"],[1090,"1"]]}`, `series {pod="a"}: sample at 1970-01-01T00:18:10Z outside the range asked, 1970-01-01T00:16:40Z..1970-01-01T00:17:40Z`},
		{"twice", `{"metric":{"pod":"a"},"values":[[1000,"1"]]},{"metric":{"pod":"a"},"values":[[1030,"1"]]}`, `series {pod="a"} twice in one answer`},
		{"fine", `{"metric":{"pod":"a"},"values":[[1000,"1"],[1060,"2"]]},{"metric":{"pod":"b"},"values":[[1030,"1"]]}`, ""},
	} {
		c := c
		cl, _ := fakeProm(t, reply(200, `{"status":"success","data":{"resultType":"matrix","result":[`+c.values+`]}}`))
		m, _, err := cl.Range(context.Background(), "up", start, end, 30*time.Second)
		if c.want == "" {
			if err != nil || len(m) != 2 {
				t.Errorf("%s: %v, %v; want 2 series", c.name, m, err)
			}
			continue
		}
		if ReasonOf(err) != ReasonBadResponse || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "(query: up)") {
			t.Errorf("%s: err = %v; want bad_response with %q and the query", c.name, err, c.want)
		}
	}
}

// TestTimeoutSaysTheTimeout: a query the server does not answer within the
// client's timeout (300 ms here) says so and what to change, not only Go's
// "context deadline exceeded" (backtest's hint was nowhere); reason
// timeout either way, on each path: Range, Instant and the batched query.
func TestTimeoutSaysTheTimeout(t *testing.T) {
	stop := make(chan struct{})
	defer close(stop)
	c, _ := fakeProm(t, func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stop:
		case <-r.Context().Done():
		}
	})
	start := time.Unix(1000, 0)
	_, _, rerr := c.Range(context.Background(), "up", start, start.Add(time.Minute), 30*time.Second)
	_, _, ierr := c.Instant(context.Background(), "up", start)
	// serve's batched path (two or more targets) too: it said "context
	// deadline exceeded" alone.
	_, _, berr := c.instantTagged(context.Background(), plainText("up"), 0, start)
	for name, err := range map[string]error{"range": rerr, "instant": ierr, "batched": berr} {
		if ReasonOf(err) != ReasonTimeout || !strings.Contains(err.Error(), "promql: timeout: no answer in 300ms, the limit per query (raise it, or shorten the range or simplify the query)") || !strings.Contains(err.Error(), "(query: up)") {
			t.Errorf("%s: %v; want a timeout naming 300ms and the query", name, err)
		}
	}
}

// TestNativeHistogramSampleIsUnknown: a query answered with a native
// histogram sample (no float value) is unknown, as a NaN: a replicas query
// or a running sum so answered read as 0 (client_golang leaves Value 0),
// and serve decided 1 replica on "0 current" with no error counted.
func TestNativeHistogramSampleIsUnknown(t *testing.T) {
	c, _ := fakeProm(t, reply(200, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"histogram":[1737152900,{"count":"5","sum":"3","buckets":[[0,"0.1","0.2","5"]]}]}]}}`))
	v, _, err := c.Instant(context.Background(), "up", time.Unix(1737152900, 0))
	if err != nil || len(v) != 1 || !math.IsNaN(float64(v[0].Value)) {
		t.Fatalf("Instant: %v, %v; want one sample of NaN", v, err)
	}
	tg := Target{Name: "chat", Server: modelserver.VLLM, Replicas: `kube_deployment_spec_replicas{deployment="chat"}`}
	tg.Selector, _ = ParseSelector(`{namespace="llm"}`)
	res, _ := (&Evaluator{API: c}).Evaluate(context.Background(), []Target{tg}, time.Unix(1737152900, 0))
	for _, s := range []Signal{Current, Running, Waiting} {
		if ReasonOf(res[0].Errors[s]) != ReasonNaN || !math.IsNaN(res[0].Values[s]) {
			t.Errorf("%s: %v (%v); want unknown, nan", s, res[0].Values[s], res[0].Errors[s])
		}
	}
}

// TestDemandAndLatencyBounds: every query answered with 1e20 (a counter
// read as a gauge, a broken exporter): the demand rates (above 1e6
// requests or 1e6 x 2^20 = 1.048576e12 tokens a second) and the latency
// quantile (above 1e7 s) are unknown, bad_data (1e20 prompt tokens a
// second scaled a target up); at the bounds' own values they are read.
func TestDemandAndLatencyBounds(t *testing.T) {
	for _, tc := range []struct {
		v      string
		reason Reason
	}{{"1e20", ReasonBadData}, {"1e6", 0}} {
		c, _ := fakeProm(t, reply(200, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1737152900,"`+tc.v+`"]}]}}`))
		tg := Target{Name: "chat", Server: modelserver.VLLM, Replicas: `kube_deployment_spec_replicas{deployment="chat"}`, Demand: true, TTFTQuantile: 0.95, TTFTWindow: time.Minute}
		tg.Selector, _ = ParseSelector(`{namespace="llm"}`)
		res, _ := (&Evaluator{API: c}).Evaluate(context.Background(), []Target{tg}, time.Unix(1737152900, 0))
		for _, s := range []Signal{Arrivals, PromptTokens, GenerationTokens, TTFT} {
			if got := ReasonOf(res[0].Errors[s]); got != tc.reason || (tc.reason != 0) != math.IsNaN(res[0].Values[s]) {
				t.Errorf("%s: %s %v (%v); want reason %v", tc.v, s, res[0].Values[s], res[0].Errors[s], tc.reason)
			}
		}
	}
}

// TestZeroReplicasNoPods: a target whose replicas query reads 0 has no
// pod, so its running and waiting (sums over no series) are 0, not failed
// reads; with one replica and no series they stay empty (the pods are
// there, their series are not), and with no replicas query too.
func TestZeroReplicasNoPods(t *testing.T) {
	for _, tc := range []struct {
		replicas string // the replicas query's value; "" no replicas query
		known    bool
	}{{"0", true}, {"1", false}, {"", false}} {
		c, _ := fakeProm(t, func(w http.ResponseWriter, r *http.Request) {
			q := r.FormValue("query")
			result := "[]"
			if tc.replicas != "" && strings.Contains(q, "kube_deployment_spec_replicas") {
				result = `[{"metric":{},"value":[1737152900,"` + tc.replicas + `"]}]`
			}
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":`+result+`}}`)
		})
		tg := Target{Name: "chat", Server: modelserver.VLLM}
		if tc.replicas != "" {
			tg.Replicas = `kube_deployment_spec_replicas{deployment="chat"}`
		}
		tg.Selector, _ = ParseSelector(`{namespace="llm"}`)
		res, _ := (&Evaluator{API: c}).Evaluate(context.Background(), []Target{tg}, time.Unix(1737152900, 0))
		r := res[0]
		for _, s := range []Signal{Running, Waiting} {
			switch {
			case tc.known && (r.Errors[s] != nil || r.Values[s] != 0):
				t.Errorf("replicas %q: %s %v (%v), want 0 and no error", tc.replicas, s, r.Values[s], r.Errors[s])
			case !tc.known && (ReasonOf(r.Errors[s]) != ReasonEmpty || !math.IsNaN(r.Values[s])):
				t.Errorf("replicas %q: %s %v (%v), want unknown, empty", tc.replicas, s, r.Values[s], r.Errors[s])
			}
		}
	}
}
