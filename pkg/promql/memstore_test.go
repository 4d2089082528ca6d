package promql

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/chunks"
	"github.com/prometheus/prometheus/util/annotations"
)

// memStore is an in-memory storage.Queryable for Prometheus's PromQL
// engine, loaded from promqltest-style lines (`name{labels} 1+2x10 stale`,
// parsed by Prometheus's own series-description parser), one sample every
// step from time 0. It keeps the main module free of the TSDB test storage.
type memStore struct {
	series []storage.Series
}

func loadSeries(t *testing.T, step time.Duration, text string) *memStore {
	t.Helper()
	st := &memStore{}
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		lset, vals, err := pql.ParseSeriesDesc(line)
		if err != nil {
			t.Fatalf("series %q: %v", line, err)
		}
		var samples []chunks.Sample
		for i, v := range vals {
			if v.Omitted {
				continue
			}
			samples = append(samples, fSample{t: int64(i) * step.Milliseconds(), f: v.Value})
		}
		st.series = append(st.series, storage.NewListSeries(lset, samples))
	}
	return st
}

// stale is the staleness marker value for use in assertions.
var stale = math.Float64frombits(value.StaleNaN)

func (m *memStore) Querier(_, _ int64) (storage.Querier, error) {
	return &storage.MockQuerier{SelectMockFunction: func(_ bool, _ *storage.SelectHints, ms ...*labels.Matcher) storage.SeriesSet {
		var out []storage.Series
		for _, s := range m.series {
			if matchesAll(s.Labels(), ms) {
				out = append(out, s)
			}
		}
		return &listSet{series: out, i: -1}
	}}, nil
}

func matchesAll(l labels.Labels, ms []*labels.Matcher) bool {
	for _, m := range ms {
		if !m.Matches(l.Get(m.Name)) {
			return false
		}
	}
	return true
}

type listSet struct {
	series []storage.Series
	i      int
}

func (s *listSet) Next() bool                        { s.i++; return s.i < len(s.series) }
func (s *listSet) At() storage.Series                { return s.series[s.i] }
func (s *listSet) Err() error                        { return nil }
func (s *listSet) Warnings() annotations.Annotations { return nil }

type fSample struct {
	t int64
	f float64
}

func (s fSample) T() int64                      { return s.t }
func (s fSample) ST() int64                     { return 0 }
func (s fSample) F() float64                    { return s.f }
func (s fSample) H() *histogram.Histogram       { return nil }
func (s fSample) FH() *histogram.FloatHistogram { return nil }
func (s fSample) Type() chunkenc.ValueType      { return chunkenc.ValFloat }
func (s fSample) Copy() chunks.Sample           { return s }

var _ = context.Background
