package promql

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/modelserver"
)

// TestPartialAnswerIsUnknown: a querier that could not read every store
// answers 200 with what the others hold. Thanos says so in a warning
// (its partial response), VictoriaMetrics in "isPartial": true, which
// client_golang does not read. Here 4 pods run 5 requests each; the store
// of two of them is down, so the answer's sum is 10 where it is 20: read as
// complete it halves the load and a scale-down follows. Both answers, on
// the single-query (v1) path and the batched one, make the signal unknown
// (ReasonPartial, NaN), the error saying what to do. A PromQL annotation
// (Prometheus's own "PromQL warning: ..." / "PromQL info: ...") is about
// the arithmetic, not missing data: its values are read.
func TestPartialAnswerIsUnknown(t *testing.T) {
	const thanos = `receive series from Addr: prometheus-b:10901 LabelSets: {replica="b"}: rpc error: code = Unavailable desc = connection refused`
	at := time.Unix(1737152900, 0)
	body := func(env string, vals ...string) string {
		var rs []string
		for i, v := range vals {
			rs = append(rs, fmt.Sprintf(`{"metric":{"%s":"%d"},"value":[1737152900,"%s"]}`, TargetLabel, i, v))
		}
		return `{"status":"success",` + env + `"data":{"resultType":"vector","result":[` + strings.Join(rs, ",") + `]}}`
	}
	for _, tc := range []struct {
		name, env string
		partial   bool
	}{
		{"thanos partial response", `"warnings":[` + fmt.Sprintf("%q", thanos) + `],`, true},
		{"victoriametrics isPartial", `"isPartial":true,`, true},
		{"victoriametrics isPartial, spaced", `"isPartial" : true,`, true},
		{"victoriametrics whole", `"isPartial":false,`, false},
		{"promql annotation", `"warnings":["PromQL warning: encountered a mix of histograms and floats for metric name \"x\""],"infos":["PromQL info: metric might not be a counter, name does not end in _total/_sum/_count/_bucket: \"y\""],`, false},
		{"a label named isPartial", ``, false},
	} {
		for _, batched := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/batched=%v", tc.name, batched), func(t *testing.T) {
				answer := body(tc.env, "10", "10")
				if tc.name == "a label named isPartial" {
					answer = strings.Replace(answer, `"metric":{`, `"metric":{"isPartial":"true",`, 2)
				}
				c, _ := fakeProm(t, reply(http.StatusOK, answer))
				var targets []Target
				for i := range 2 {
					tg := Target{Name: fmt.Sprint("chat", i), Server: modelserver.VLLM,
						Overrides: map[Signal]string{Running: `sum(vllm:num_requests_running{namespace="llm"})`}}
					tg.Selector, _ = ParseSelector(`{namespace="llm"}`)
					targets = append(targets, tg)
				}
				ev := &Evaluator{API: c, BatchSize: 1}
				if batched {
					ev.BatchSize = 2
				}
				res, _ := ev.Evaluate(context.Background(), targets, at)
				for i, r := range res {
					v, err := r.Values[Running], r.Errors[Running]
					if !tc.partial {
						if v != 10 || err != nil {
							t.Fatalf("target %d running %v (%v), want 10", i, v, err)
						}
						continue
					}
					if !math.IsNaN(v) || ReasonOf(err) != ReasonPartial {
						t.Fatalf("target %d running %v (%v), want NaN, reason partial", i, v, err)
					}
					for _, want := range []string{"promql: partial: the answer is partial", "no-query.partial-response", "denyPartialResponse", "(query: "} {
						if !strings.Contains(err.Error(), want) {
							t.Errorf("error %q lacks %q", err, want)
						}
					}
					if w, ok := Partial(r.Warnings); !ok || (tc.env != "" && !strings.Contains(tc.env, "isPartial") && w != thanos) {
						t.Errorf("warnings %q: want the partial one kept", r.Warnings)
					}
				}
			})
		}
	}
}

// TestIsPartialScan: the key is found across read boundaries, only with a
// bare true.
func TestIsPartialScan(t *testing.T) {
	for _, tc := range []struct {
		body string
		want bool
	}{
		{`{"status":"success","isPartial":true,"data":{}}`, true},
		{`{"status":"success","isPartial":false,"data":{}}`, false},
		{`{"status":"success","isPartial":"true"}`, false},
		{`{"metric":{"a":"\"isPartial\":true"}}`, false},
		{`{"""isPartial":true}`, true},
		{"{\"isPartial\"\n:\ttrue}", true},
		{`{"xisPartial":true}`, false},
		{`{"isPartial":tru}`, false},
	} {
		for size := 1; size <= len(tc.body); size++ {
			var s isPartialScan
			got := false
			for i := 0; i < len(tc.body); i += size {
				got = s.feed([]byte(tc.body[i:min(i+size, len(tc.body))])) || got
			}
			if got != tc.want {
				t.Fatalf("%s in pieces of %d: %v, want %v", tc.body, size, got, tc.want)
			}
		}
	}
}

// TestPartialAnnotationCounts: past its first 10 annotations Prometheus
// adds a line counting the rest, "N more warning annotations omitted"
// (util/annotations.AsStrings), or, in the releases that kept warnings
// and infos in one list (from 2.47 on), "N more annotations omitted". A
// batched query over many families can have more than 10 distinct
// annotations; the count line is not a store's failure, so such an answer
// is whole. A storage warning beside them is still partial.
func TestPartialAnnotationCounts(t *testing.T) {
	anns := []string{`PromQL info: input to histogram_quantile needed to be fixed for monotonicity for metric name "a"`}
	for _, tc := range []struct {
		warnings []string
		partial  bool
	}{
		{append(anns, "3 more warning annotations omitted"), false},
		{append(anns, "12 more info annotations omitted"), false},
		{append(anns, "5 more annotations omitted"), false},
		{append(anns, "5 more annotations omitted", "remote_read: context deadline exceeded"), true},
	} {
		w, got := Partial(tc.warnings)
		if got != tc.partial {
			t.Errorf("Partial(%q) = %q, %v; want partial %v", tc.warnings, w, got, tc.partial)
		}
	}
}

// TestOmittedWarningsAskedAlone: Prometheus lists a query's first 10
// warnings and counts the rest ("N more warning annotations omitted"),
// storage warnings and PromQL's own alike, in no set order. A batch of
// two targets is answered with 10 PromQL warnings (its targets'
// expressions each add theirs) and "3 more warning annotations omitted";
// one of the three is the store of chat1's pods failing (Thanos's partial
// response), which asked alone chat1's answer lists. Before, the batch was
// read as complete: chat1's 10 requests read where 20 run, and a
// scale-down followed. Each target is now asked alone: chat0 reads 10,
// chat1 is unknown (partial).
func TestOmittedWarningsAskedAlone(t *testing.T) {
	const thanos = `receive series from Addr: prometheus-b:10901 LabelSets: {replica="b"}: rpc error: code = Unavailable desc = connection refused`
	var promql []string
	for i := range 10 {
		promql = append(promql, fmt.Sprintf("%q", fmt.Sprintf(`PromQL warning: encountered a mix of histograms and floats for metric name "x%d"`, i)))
	}
	batched := `{"status":"success","warnings":[` + strings.Join(promql, ",") + `,"3 more warning annotations omitted"],"data":{"resultType":"vector","result":[` +
		fmt.Sprintf(`{"metric":{"%s":"0"},"value":[1737152900,"10"]},{"metric":{"%s":"1"},"value":[1737152900,"10"]}`, TargetLabel, TargetLabel) + `]}}`
	alone := func(warn string) string {
		return `{"status":"success",` + warn + `"data":{"resultType":"vector","result":[{"metric":{},"value":[1737152900,"10"]}]}}`
	}
	var mu sync.Mutex
	var asked []string
	c, _ := fakeProm(t, func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		q := r.Form.Get("query")
		mu.Lock()
		asked = append(asked, q)
		mu.Unlock()
		switch {
		case strings.Contains(q, TargetLabel):
			fmt.Fprint(w, batched)
		case strings.Contains(q, `"b"`):
			fmt.Fprint(w, alone(`"warnings":[`+fmt.Sprintf("%q", thanos)+`],`))
		default:
			fmt.Fprint(w, alone(""))
		}
	})
	var targets []Target
	for i, ns := range []string{"a", "b"} {
		tg := Target{Name: fmt.Sprint("chat", i), Server: modelserver.VLLM,
			Overrides: map[Signal]string{Running: fmt.Sprintf(`sum(vllm:num_requests_running{namespace=%q})`, ns)}}
		tg.Selector, _ = ParseSelector(fmt.Sprintf(`{namespace=%q}`, ns))
		targets = append(targets, tg)
	}
	ev := &Evaluator{API: c, BatchSize: 2}
	res, _ := ev.Evaluate(context.Background(), targets, time.Unix(1737152900, 0))
	if v, err := res[0].Values[Running], res[0].Errors[Running]; v != 10 || err != nil {
		t.Errorf("chat0 running %v (%v), want 10", v, err)
	}
	if v, err := res[1].Values[Running], res[1].Errors[Running]; !math.IsNaN(v) || ReasonOf(err) != ReasonPartial {
		t.Errorf("chat1 running %v (%v), want NaN, reason partial (its store's warning, left out of the batch's 10)", v, err)
	}
	// Each signal read (running, waiting, KV usage, the pods serving):
	// its batch, then each of the two targets alone.
	if n := len(asked); n != 4*3 {
		t.Errorf("%d queries (%q), want 12: for each of 4 signals the batch, then each target alone", n, asked)
	}
}
