package promql

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/infscale/infscale/internal/sharedtest"
	"github.com/prometheus/common/model"
)

type answerRT func(*http.Request) (*http.Response, error)

func (f answerRT) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// fuzzAnswerStart is the range FuzzAnswers asks: 10 steps of 15 s.
var fuzzAnswerStart = time.Unix(1737152880, 0)

// FuzzAnswers: any body Prometheus's URL answers a range or an instant
// query with (backtest's history reads, serve's reads) is a *QueryError
// or a result of the shape asked: a range's series at most once each,
// their points increasing inside the range; an instant's samples within
// MaxAnswerSkew of the time asked. The range answer's scan (rangeScan)
// reads the body split anywhere as it reads it whole.
func FuzzAnswers(f *testing.F) {
	for _, tc := range decodeCases {
		f.Add([]byte(tc.body), uint16(7))
	}
	f.Add([]byte(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"pod":"a"},"values":[[1737152880,"1"],[1737152895,"2"]]},{"metric":{"pod":"b\"}"},"values":[[1737152910,"NaN"]]}]}}`), uint16(40))
	f.Add([]byte(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"histograms":[[1737152880,{"count":"1","sum":"2","buckets":[[0,"0","1","1"]]}]]}]}}`), uint16(3))
	f.Add([]byte(`{"status":"error","errorType":"bad_data","error":"parse error"}`), uint16(0))
	if p := sharedtest.Path(f, "cases", "02-prometheus-nan-and-inf-values.json"); p != "" {
		if fh, err := os.Open(p); err == nil {
			sc := bufio.NewScanner(fh)
			for sc.Scan() {
				f.Add(bytes.Clone(sc.Bytes()), uint16(20))
			}
			fh.Close()
		}
	}
	if files, _ := filepath.Glob(filepath.Join("testdata", "*.json")); len(files) > 0 {
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b, uint16(50))
			}
		}
	}
	f.Fuzz(func(t *testing.T, body []byte, split uint16) {
		rt := answerRT(func(r *http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 200, Header: http.Header{"Content-Type": {"application/json"}},
				Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)), Request: r}, nil
		})
		c, err := NewClient(ClientConfig{URL: "http://prometheus.test", RoundTripper: rt})
		if err != nil {
			t.Fatal(err)
		}
		ctx := context.Background()
		step := 15 * time.Second
		end := fuzzAnswerStart.Add(10 * step)
		m, _, err := c.Range(ctx, "up", fuzzAnswerStart, end, step)
		if err == nil {
			seen := map[model.Fingerprint]bool{}
			for _, ss := range m {
				if seen[ss.Metric.Fingerprint()] {
					t.Fatalf("series %v twice", ss.Metric)
				}
				seen[ss.Metric.Fingerprint()] = true
				for i, p := range ss.Values {
					if p.Timestamp.Time().Before(fuzzAnswerStart.Add(-time.Millisecond)) || p.Timestamp.Time().After(end.Add(time.Millisecond)) ||
						i > 0 && p.Timestamp <= ss.Values[i-1].Timestamp {
						t.Fatalf("series %v: point %d at %v", ss.Metric, i, p.Timestamp)
					}
				}
			}
		} else if _, ok := err.(*QueryError); !ok {
			t.Fatalf("range: %T %v, want a *QueryError", err, err)
		}
		v, _, err := c.Instant(ctx, "up", fuzzAnswerStart)
		if err == nil {
			for _, s := range v {
				at := float64(s.Timestamp) / 1e3
				if math.Abs(at-float64(fuzzAnswerStart.Unix())) > MaxAnswerSkew.Seconds() {
					t.Fatalf("sample %v at %v read", s.Metric, s.Timestamp)
				}
			}
		} else if _, ok := err.(*QueryError); !ok {
			t.Fatalf("instant: %T %v, want a *QueryError", err, err)
		}

		// The scan's verdict does not depend on where the reads split.
		k := int(split) % (len(body) + 1)
		whole, parts := &rangeScan{steps: 10}, &rangeScan{steps: 10}
		ew := whole.feed(body)
		ep := parts.feed(body[:k])
		if ep == nil {
			ep = parts.feed(body[k:])
		}
		if (ew == nil) != (ep == nil) || ew != nil && ew.Error() != ep.Error() {
			t.Fatalf("split at %d: %v; whole: %v", k, ep, ew)
		}
	})
}
