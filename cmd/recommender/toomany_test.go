package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
)

// denseProm is a Prometheus whose success counter grows by rate requests
// a second, one fresh sample at each step of a range query; every other
// query answers no series.
func denseProm(t *testing.T, rate float64) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		q := r.FormValue("query")
		if r.URL.Path != "/api/v1/query_range" {
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
			return
		}
		stamp := strings.HasPrefix(q, "timestamp(vllm:request_success_total")
		if !stamp && !strings.HasPrefix(q, "vllm:request_success_total") {
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[]}}`)
			return
		}
		start, err1 := strconv.ParseFloat(r.FormValue("start"), 64)
		end, err2 := strconv.ParseFloat(r.FormValue("end"), 64)
		step, err3 := strconv.ParseFloat(r.FormValue("step"), 64)
		if err1 != nil || err2 != nil || err3 != nil || step <= 0 {
			http.Error(w, `{"status":"error","errorType":"bad_data","error":"bad range"}`, http.StatusBadRequest)
			return
		}
		var pts []string
		for at := start; at <= end; at += step {
			v := rate * at // a counter: its increase over a step is rate x step
			if stamp {
				v = at
			}
			pts = append(pts, fmt.Sprintf(`[%s,"%s"]`, strconv.FormatFloat(at, 'f', -1, 64), strconv.FormatFloat(v, 'f', -1, 64)))
		}
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"pod":"chat-0"},"values":[%s]}]}}`, strings.Join(pts, ","))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// TestTooManyRequestsNamesTheRange: a range whose reconstructed arrivals
// total more than backtest.MaxReconstructed (2^33, 8,589,934,592) is
// refused; backtest, profile and tune each say to read a shorter range
// with --start and --end (the message said "backtest a shorter range"
// under tune and profile too, and nothing for a pair). By hand: 80,000
// req/s over two days is 1.3824e10 requests.
func TestTooManyRequestsNamesTheRange(t *testing.T) {
	if testing.Short() {
		t.Skip("reads two days of 30 s steps from a fake Prometheus per command")
	}
	srv := denseProm(t, 80000)
	for _, c := range []struct{ cmd, start, total string }{
		{"backtest", "2026-01-03T12:00:00Z", "1.382e+10"},
		{"profile", "2026-01-03T12:00:00Z", "1.382e+10"},
		{"tune", "2026-01-03T12:00:00Z", "1.382e+10"},
	} {
		code, _, stderr := runIn(t, nil, c.cmd, "--prometheus-url", srv.URL, "--selector", `{namespace="llm"}`,
			"--start", c.start, "--end", "2026-01-05T12:00:00Z")
		want := "infscale: " + c.cmd + ": too many requests to replay: the range's reconstructed arrivals total " + c.total + " requests, more than the 8589934592 (2^33) a replay of history takes (each policy's replay would take an hour or more) over " + c.start + "..2026-01-05T12:00:00Z; " + c.cmd + " a shorter range (--start, --end)"
		if code != exitRuntime || !strings.Contains(stderr, want) {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant exit 1 and %q", c.cmd, code, stderr, want)
		}
	}
	// A pair: the pool read first (decode) is named, and the range.
	code, _, stderr := runIn(t, nil, "backtest", "--pd", "--prometheus-url", srv.URL, "--prefill-selector", `{pod=~"p-.*"}`, "--decode-selector", `{pod=~"d-.*"}`,
		"--start", "2026-01-03T12:00:00Z", "--end", "2026-01-05T12:00:00Z")
	want := "decode pool: too many requests to replay: the range's reconstructed arrivals total 1.382e+10 requests, more than the 8589934592 (2^33) a replay of history takes (each policy's replay would take an hour or more) over 2026-01-03T12:00:00Z..2026-01-05T12:00:00Z; backtest a shorter range (--start, --end)"
	if code != exitRuntime || !strings.Contains(stderr, want) {
		t.Errorf("backtest --pd: exit %d, stderr:\n%s\nwant exit 1 and %q", code, stderr, want)
	}
}
