package promql

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestRangeRetries: a range query (history: backtest, profile, tune) that
// Prometheus could not answer now is asked again, up to Retries times,
// after the answer's Retry-After or else 1 s, 2 s, ...; a backtest failed
// at the first 503 of its 6 to 13 queries of minutes each. Not asked again:
// a query timeout (it would time out again), credentials (401) or the URL
// (404). Each case: the answers in order (the last repeats), how many
// requests, the least time they take, and the reason when it fails.
func TestRangeRetries(t *testing.T) {
	const matrix = `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1767607200,"5"]]}]}}`
	type ans struct {
		status     int
		retryAfter string
	}
	for _, tc := range []struct {
		name     string
		answers  []ans
		requests int64
		least    time.Duration
		reason   Reason // 0: the matrix read
	}{
		{"503, Retry-After 1, then 200", []ans{{503, "1"}, {200, ""}}, 2, time.Second, 0},
		{"429 without Retry-After, then 200", []ans{{429, ""}, {200, ""}}, 2, time.Second, 0},
		{"503 with Retry-After 0, three times, then 200", []ans{{503, "0"}, {503, "0"}, {503, "0"}, {200, ""}}, 4, 0, 0},
		{"502 from a proxy (Retry-After is a 429's or 503's), then 200", []ans{{502, "0"}, {200, ""}}, 2, time.Second, 0},
		{"503 with Retry-After 0 every time: 1 + 3 requests, then the error", []ans{{503, "0"}}, 4, 0, ReasonUnavailable},
		{"503 query timeout: not again", []ans{{-503, ""}}, 1, 0, ReasonTimeout},
		{"401: not again", []ans{{401, ""}}, 1, 0, ReasonUnavailable},
		{"404: not again", []ans{{404, ""}}, 1, 0, ReasonUnavailable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int64
			c, _ := fakeProm(t, func(w http.ResponseWriter, r *http.Request) {
				a := tc.answers[min(int(n.Add(1))-1, len(tc.answers)-1)]
				if a.retryAfter != "" {
					w.Header().Set("Retry-After", a.retryAfter)
				}
				switch {
				case a.status == 200:
					fmt.Fprint(w, matrix)
				case a.status == -503:
					w.WriteHeader(503)
					fmt.Fprint(w, `{"status":"error","errorType":"timeout","error":"query timed out in expression evaluation"}`)
				default:
					http.Error(w, http.StatusText(a.status), a.status)
				}
			})
			c.retries = 3
			at := time.Unix(1767607200, 0)
			began := time.Now()
			m, _, err := c.Range(context.Background(), "up", at, at, time.Minute)
			took := time.Since(began)
			if got := n.Load(); got != tc.requests {
				t.Errorf("%d requests, want %d", got, tc.requests)
			}
			if took < tc.least || took > tc.least+2*time.Second {
				t.Errorf("took %v, want %v (+ at most 2 s)", took, tc.least)
			}
			switch {
			case tc.reason == 0 && (err != nil || len(m) != 1 || m[0].Values[0].Value != 5):
				t.Errorf("%v, %v; want the matrix read", m, err)
			case tc.reason != 0 && ReasonOf(err) != tc.reason:
				t.Errorf("error %v, want %v", err, tc.reason)
			case tc.requests > 1 && tc.reason != 0 && !strings.Contains(err.Error(), fmt.Sprintf("(asked %d times over ", tc.requests)):
				t.Errorf("error %v does not say it was asked %d times", err, tc.requests)
			}
		})
	}
	// The wait ends with the context (Ctrl-C), at once.
	c, _ := fakeProm(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "30")
		http.Error(w, "busy", 503)
	})
	c.retries = 3
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	began := time.Now()
	_, _, err := c.Range(ctx, "up", time.Unix(1767607200, 0), time.Unix(1767607200, 0), time.Minute)
	if took := time.Since(began); took > 2*time.Second || err == nil || !strings.Contains(err.Error(), "deadline") {
		t.Errorf("canceled wait: %v after %v, want the context's error at once", err, took)
	}
	// Nothing listens at the address: said at once, not asked again.
	c2, err := NewClient(ClientConfig{URL: "http://127.0.0.1:1", Retries: 3})
	if err != nil {
		t.Fatal(err)
	}
	began = time.Now()
	if _, _, err := c2.Range(context.Background(), "up", time.Unix(1767607200, 0), time.Unix(1767607200, 0), time.Minute); ReasonOf(err) != ReasonUnavailable || time.Since(began) > 900*time.Millisecond {
		t.Errorf("refused: %v after %v, want unavailable at once", err, time.Since(began))
	}
	// Without Retries (serve), never again.
	var n atomic.Int64
	c, _ = fakeProm(t, func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		http.Error(w, "busy", 503)
	})
	if _, _, err := c.Range(context.Background(), "up", time.Unix(1767607200, 0), time.Unix(1767607200, 0), time.Minute); ReasonOf(err) != ReasonUnavailable || n.Load() != 1 {
		t.Errorf("no retries: %v after %d requests, want unavailable after 1", err, n.Load())
	}
}

// TestInstantRetries: a history's instant queries (backtest's token and
// TTFT histograms and means over the whole range, the heaviest it asks)
// are asked again as its range queries are, on a Client with Retries; a
// 503 there failed the backtest after its range queries had run. Without
// Retries (serve) never again; a 401 never.
func TestInstantRetries(t *testing.T) {
	at := time.Unix(1767607200, 0)
	vector := `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1767607200,"5"]}]}}`
	for _, tc := range []struct {
		name     string
		retries  int
		status   []int // the answers in order, the last repeating; 200 is the vector
		requests int64
		ok       bool
	}{
		{"503 then 200, Retries 3", 3, []int{503, 200}, 2, true},
		{"429 twice then 200, Retries 3", 3, []int{429, 429, 200}, 3, true},
		{"503 every time, Retries 3", 3, []int{503}, 4, false},
		{"503 then 200, Retries 0 (serve)", 0, []int{503, 200}, 1, false},
		{"401, Retries 3", 3, []int{401}, 1, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var n atomic.Int64
			c, _ := fakeProm(t, func(w http.ResponseWriter, r *http.Request) {
				s := tc.status[min(int(n.Add(1))-1, len(tc.status)-1)]
				if s == 200 {
					fmt.Fprint(w, vector)
					return
				}
				w.Header().Set("Retry-After", "0")
				http.Error(w, http.StatusText(s), s)
			})
			c.retries = tc.retries
			v, _, err := c.Instant(context.Background(), "sum(up)", at)
			if got := n.Load(); got != tc.requests {
				t.Errorf("%d requests, want %d", got, tc.requests)
			}
			switch {
			case tc.ok && (err != nil || len(v) != 1 || v[0].Value != 5):
				t.Errorf("%v, %v; want 5", v, err)
			case !tc.ok && ReasonOf(err) != ReasonUnavailable:
				t.Errorf("%v, %v; want unavailable", v, err)
			}
		})
	}
}

// TestRetryAfterHeader: Retry-After in seconds is capped at MaxRetryWait
// (1 min), seconds beyond int64 too (they fell back to the 1 s backoff),
// an HTTP date is the time until it (capped where it is waited for), and
// a negative or unreadable value asks for nothing.
func TestRetryAfterHeader(t *testing.T) {
	now := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		h     string
		wait  time.Duration
		asked bool
	}{
		{"5", 5 * time.Second, true},
		{"3600", time.Minute, true},
		{"99999999999999999999", time.Minute, true},
		{"Mon, 05 Jan 2026 10:00:20 GMT", 20 * time.Second, true},
		{"Mon, 05 Jan 2026 09:00:00 GMT", 0, true},
		{"-5", 0, false},
		{"soon", 0, false},
		{"", 0, false},
	} {
		var r retryAfter
		r.set(tc.h, now)
		if wait, asked := r.get(); wait != tc.wait || asked != tc.asked {
			t.Errorf("Retry-After %q: wait %v asked %v, want %v %v", tc.h, wait, asked, tc.wait, tc.asked)
		}
	}
}

// TestRangeRetriesRestart: a Prometheus that restarts between a history's
// queries refuses connections for a moment. A client that has had an
// answer asks again (1 s, then 2 s: the server is back after 1.5 s, so the
// third request, 3 s in, is answered); one that never had an answer says
// "refused" at once (TestRangeRetries: a wrong address).
func TestRangeRetriesRestart(t *testing.T) {
	const matrix = `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1767607200,"5"]]}]}}`
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, matrix)
	})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	srv := &http.Server{Handler: handler}
	go srv.Serve(ln)
	c, err := NewClient(ClientConfig{URL: "http://" + addr, Retries: 3})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1767607200, 0)
	if _, _, err := c.Range(context.Background(), "up", at, at, time.Minute); err != nil {
		t.Fatal(err)
	}
	srv.Close() // the restart: nothing listens until the new one does
	back := make(chan *http.Server, 1)
	go func() {
		time.Sleep(1500 * time.Millisecond)
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Error(err)
			back <- nil
			return
		}
		s := &http.Server{Handler: handler}
		back <- s
		s.Serve(ln)
	}()
	began := time.Now()
	m, _, err := c.Range(context.Background(), "up", at, at, time.Minute)
	took := time.Since(began)
	if s := <-back; s != nil {
		defer s.Close()
	}
	if err != nil || len(m) != 1 || took < 3*time.Second || took > 5*time.Second {
		t.Errorf("after a restart: %v, %v in %v; want the matrix after 1 s + 2 s of waits", m, err, took)
	}
}
