package promql

import (
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"hash/fnv"
	"io"
	"net/http"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/common/model"
)

// MaxInstantAnswerBytes bounds the body of one instant query's answer:
// 64 MiB, about 60 times a batched answer for 10,000 targets (about 1 MB).
// MaxRangeAnswerBytes bounds one range query's (one chunk of at most
// MaxPointsPerSeries points a series): 2 GiB, Prometheus's default
// --query.max-samples (50,000,000) at some 40 bytes of JSON a sample. A
// larger answer is no Prometheus answer to infscale's queries (a URL
// serving a download, a proxy streaming without end: such a body filled
// 11 GB of memory in 12 s, and went on); it is refused as it is read,
// ReasonBadResponse.
const (
	MaxInstantAnswerBytes = 64 << 20
	MaxRangeAnswerBytes   = 2 << 30
)

// instantInFlight counts the bytes read of the answers bounded by
// MaxInstantAnswerBytes (instant queries; serve's range queries) being
// read at once, by every client of the process: together at most that
// bound, or an eighth of the Go memory limit when less
// (answerBudgetBytes). Each of a cycle's queries (seven for one target,
// sent at once) read its own 64 MiB before: answers without end held 851
// MB under GOMEMLIMIT=115MiB, the chart's 128Mi container.
var instantInFlight = &answerBudget{max: MaxInstantAnswerBytes}

// answerBudget is a bound on the bytes of several answers together.
type answerBudget struct {
	used atomic.Int64
	max  int64
}

// minAnswerBudget is the least shared bound whatever the memory limit:
// four times a batched answer for 10,000 targets.
const minAnswerBudget = 4 << 20

// answerBudgetBytes is the shared bound under a memory limit (Go's
// GOMEMLIMIT; math.MaxInt64 when none): an eighth of it, between
// minAnswerBudget and bound. An answer read costs some four times its
// bytes (the buffer doubles as it grows, the old one waits for the
// collector): 64 MiB shared peaked at 323 MB of RSS under
// GOMEMLIMIT=115MiB, an eighth (14 MiB) at 162 MB.
func answerBudgetBytes(limit, bound int64) int64 {
	return min(bound, max(limit/8, minAnswerBudget))
}

// rangeBoundKey is the context key of a range query's bound (a
// rangeBound: its client's rangeMax and the chunk's steps).
type rangeBoundKey struct{}

// rangeBound is a range query's bound: max bytes at most, and what a
// matrix of steps points a series can hold (rangeScan).
type rangeBound struct {
	max   int64
	steps int64
}

// What a range answer can legitimately take, beside its points: bytes
// before the first series and after the last (status, warnings, padding),
// a series' labels, and one point: a float sample is at most some 45
// bytes of JSON ([1767607200.123,"-1.2345678901234567e+308"]), a native
// histogram's some kB.
const (
	rangeAnswerSlack    = 1 << 20
	rangeSeriesBytes    = 64 << 10
	rangePointBytes     = 128
	rangeHistogramBytes = 16 << 10
)

// rangeScan follows a query_range answer's JSON as it is read (strings
// and escapes skipped, nesting counted) and bounds it by what a matrix of
// steps points a series can hold: no series with more points than the
// steps asked and one (the times' rounding), no more bytes than
// rangeAnswerSlack, rangeSeriesBytes a series and rangePointBytes a point
// (rangeHistogramBytes a histogram point), and no series whose labels (its "metric" object, byte for
// byte) an earlier series had: Prometheus answers each label set once,
// and a repeated series would bring its own rangeSeriesBytes. An answer
// that never ends (a proxy repeating a series or the whole body, padding
// without end) fails there, long before the 2 GiB bound, and a week of
// many pods' points still reads: its bytes grow with its points.
type rangeScan struct {
	steps                 int64
	stack                 []byte // open containers, '{' or '['
	inStr, esc            bool
	series, points, hists int64
	seriesPoints          int64
	read                  int64
	// inMetric: within a series' "metric" object, hashed into metric
	// (its first bytes kept in head, for the error); labels holds the
	// hashes of the label sets read (a series without "metric" has {}:
	// client_golang reads it so).
	inMetric, hadMetric bool
	metric              hash.Hash
	head                []byte
	labels              map[[16]byte]bool
}

// maxLabelsShown bounds the bytes of labels kept to name a repeated
// series in its error.
const maxLabelsShown = 4 << 10

// hashMetric adds b, bytes of a series' "metric" object, to its hash.
func (r *rangeScan) hashMetric(b []byte) {
	r.metric.Write(b)
	if n := maxLabelsShown - len(r.head); n > 0 {
		r.head = append(r.head, b[:min(n, len(b))]...)
	}
}

// metricEnd checks the label set just hashed against the earlier series'.
func (r *rangeScan) metricEnd() error {
	var k [16]byte
	r.metric.Sum(k[:0])
	if r.labels[k] {
		var m model.Metric
		shown := string(r.head) + "..." // cut at maxLabelsShown
		if err := json.Unmarshal(r.head, &m); err == nil {
			shown = m.String()
		}
		return seriesTwiceError{shown}
	}
	r.labels[k] = true
	return nil
}

// seriesTwiceError is a range answer holding one label set twice, which
// Prometheus never gives: said as the answer is read (rangeScan: a
// series repeated without end) or once decoded (matrixShape).
type seriesTwiceError struct{ labels string }

func (e seriesTwiceError) Error() string {
	return "series " + e.labels + " twice in one answer: not a Prometheus range query result (a proxy that merges answers, or repeats one?)"
}

// feed scans p; an error says what the answer holds past its bound.
func (r *rangeScan) feed(p []byte) error {
	r.read += int64(len(p))
	from := 0 // where this p's part of an open "metric" object begins
	for i, c := range p {
		if r.inStr {
			switch {
			case r.esc:
				r.esc = false
			case c == '\\':
				r.esc = true
			case c == '"':
				r.inStr = false
			}
			continue
		}
		switch c {
		case '"':
			r.inStr = true
		case '{', '[':
			r.stack = append(r.stack, c)
			d := len(r.stack)
			// root{ data{ result[ series{ values[ point[ (histogram{)
			switch {
			case d == 4 && c == '{' && r.stack[2] == '[':
				r.series++
				r.seriesPoints = 0
				r.hadMetric = false
				if r.metric == nil {
					r.metric, r.labels = fnv.New128a(), map[[16]byte]bool{}
				}
			case d == 6 && c == '[' && r.stack[4] == '[':
				r.points++
				// One point more than the grid is let pass: the range's times
				// go as float seconds on the wire and may round to one more step.
				if r.seriesPoints++; r.seriesPoints > r.steps+1 {
					return fmt.Errorf("%w: series %d of the answer has more than %d points, the %d steps asked and one for their times' rounding: not a Prometheus answer to this range (a proxy repeating a series' points?)", ErrAnswerTooLarge, r.series, r.steps+1, r.steps)
				}
			case d == 7 && c == '{':
				r.hists++
			case d == 5 && c == '{' && r.stack[3] == '{' && r.stack[2] == '[':
				r.inMetric, r.hadMetric, from = true, true, i
				r.metric.Reset()
				r.head = r.head[:0]
			}
			if d > 64 {
				return fmt.Errorf("%w: JSON nested %d deep: not a Prometheus range answer", ErrAnswerTooLarge, d)
			}
		case '}', ']':
			if r.inMetric && len(r.stack) == 5 {
				r.inMetric = false
				r.hashMetric(p[from : i+1])
				if err := r.metricEnd(); err != nil {
					return err
				}
			}
			// The series object closes (its '{' opened it, and made the hash):
			// a '}' closing another container there is no series.
			if d := len(r.stack); d == 4 && c == '}' && r.stack[3] == '{' && r.stack[2] == '[' && !r.hadMetric {
				r.metric.Reset()
				r.head = r.head[:0]
				r.hashMetric([]byte("{}"))
				if err := r.metricEnd(); err != nil {
					return err
				}
			}
			if len(r.stack) > 0 {
				r.stack = r.stack[:len(r.stack)-1]
			}
		}
	}
	if r.inMetric {
		r.hashMetric(p[from:])
	}
	if allowed := rangeAnswerSlack + r.series*rangeSeriesBytes + r.points*rangePointBytes + r.hists*rangeHistogramBytes; r.read > allowed {
		return fmt.Errorf("%w: %d MiB read holding %d series and %d points, more than such an answer takes (%d KiB a series, %d bytes a point, 1 MiB besides): not a Prometheus answer to a range of %d steps (padding or a body without end?)",
			ErrAnswerTooLarge, r.read>>20, r.series, r.points, rangeSeriesBytes>>10, rangePointBytes, r.steps)
	}
	return nil
}

// ErrAnswerTooLarge is the error of an answer past its bound (errors.Is).
var ErrAnswerTooLarge = errors.New("answer too large")

// limitAnswers is a RoundTripper whose responses' bodies fail with
// ErrAnswerTooLarge past the bound of their query's kind (query_range:
// MaxRangeAnswerBytes, anything else MaxInstantAnswerBytes). It also
// notes a 429's or 503's Retry-After in the request context's retryAfter,
// if any (client_golang's errors do not keep the headers), and an answer
// VictoriaMetrics marked partial in the context's partialMark, if any
// (client_golang does not read that key). It notes each answer's Date
// in clock, if not nil (Client.ServerClock).
type limitAnswers struct {
	rt    http.RoundTripper
	clock *serverClock
}

// retryAfterKey is the context key of a request's *retryAfter.
type retryAfterKey struct{}

// retryAfter is the wait a 429 or 503 answer asked for (its Retry-After
// header: seconds, or an HTTP date).
type retryAfter struct {
	mu    sync.Mutex
	wait  time.Duration
	asked bool
}

func (r *retryAfter) set(h string, now time.Time) {
	h = strings.TrimSpace(h)
	if h == "" {
		return
	}
	var wait time.Duration
	if secs, err := strconv.ParseInt(h, 10, 64); err == nil {
		if secs < 0 {
			return
		}
		wait = time.Duration(min(secs, int64(MaxRetryWait/time.Second))) * time.Second
	} else if errors.Is(err, strconv.ErrRange) && strings.Trim(h, "0123456789") == "" {
		wait = MaxRetryWait // seconds past int64: as long as any wait
	} else if at, err := http.ParseTime(h); err == nil {
		wait = max(at.Sub(now), 0)
	} else {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.wait, r.asked = wait, true
}

// get returns the wait asked for, if an answer asked for one.
func (r *retryAfter) get() (time.Duration, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.wait, r.asked
}

func (l limitAnswers) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.rt.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	l.clock.note(resp.Header)
	if ra, ok := req.Context().Value(retryAfterKey{}).(*retryAfter); ok &&
		(resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		ra.set(resp.Header.Get("Retry-After"), time.Now())
	}
	max := int64(MaxInstantAnswerBytes)
	var rs *rangeScan
	if strings.HasSuffix(req.URL.Path, "/query_range") {
		max = MaxRangeAnswerBytes
		if b, ok := req.Context().Value(rangeBoundKey{}).(rangeBound); ok {
			if b.max > 0 {
				max = b.max
			}
			if b.steps > 0 {
				rs = &rangeScan{steps: b.steps}
			}
		}
	}
	var shared *answerBudget
	if max <= MaxInstantAnswerBytes { // a history's range answers are read one at a time
		shared = instantInFlight
	}
	budget := int64(0)
	if shared != nil {
		budget = answerBudgetBytes(debug.SetMemoryLimit(-1), shared.max)
	}
	lb := &limitedBody{rc: resp.Body, left: max, max: max, declared: resp.ContentLength, shared: shared, budget: budget, rangeScan: rs}
	if pm, ok := req.Context().Value(partialKey{}).(*partialMark); ok {
		lb.partial, lb.scan = pm, &isPartialScan{}
	}
	resp.Body = lb
	return resp, nil
}

// limitedBody reads rc until more than max bytes came (or a declared
// Content-Length says they will), then fails.
type limitedBody struct {
	rc       io.ReadCloser
	left     int64
	max      int64
	declared int64
	// partial is marked when scan finds "isPartial":true in the body.
	partial *partialMark
	scan    *isPartialScan
	// rangeScan, when set, bounds a range answer by its series and points.
	rangeScan *rangeScan
	// shared, when set, bounds this body with the others being read at
	// once; held is what this body has counted in it, given back (once)
	// at its end, a failed read or Close.
	shared   *answerBudget
	budget   int64 // shared's bound for this body (answerBudgetBytes)
	mu       sync.Mutex
	held     int64
	released bool
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.declared > b.max || b.left < 0 {
		return 0, b.tooLarge()
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
	if b.scan != nil && b.scan.feed(p[:n]) {
		b.partial.seen.Store(true)
	}
	b.left -= int64(n)
	if b.left < 0 {
		return n, b.tooLarge()
	}
	if b.rangeScan != nil {
		if serr := b.rangeScan.feed(p[:n]); serr != nil {
			b.rangeScan = nil // said once
			return n, serr
		}
	}
	if b.shared != nil {
		b.mu.Lock()
		over := false
		if !b.released && n > 0 {
			b.held += int64(n)
			over = b.shared.used.Add(int64(n)) > b.budget
		}
		if err != nil || over {
			// Read through (EOF) or failed: its bytes are given back now,
			// not only at a Close a caller might leave out.
			b.release()
		}
		b.mu.Unlock()
		if over {
			return n, fmt.Errorf("%w: more than %d MiB, the most infscale reads of one answer or of all those being read at once (is the URL a Prometheus API root? else narrow the queries' selectors)", ErrAnswerTooLarge, b.budget>>20)
		}
	}
	return n, err
}

// release gives back what the body counted in its shared bound, once;
// b.mu is held.
func (b *limitedBody) release() {
	if !b.released {
		b.released = true
		b.shared.used.Add(-b.held)
		b.held = 0
	}
}

// Close releases the body's share (a read cut by a deadline is closed
// from another goroutine: hence the lock).
func (b *limitedBody) Close() error {
	if b.shared != nil {
		b.mu.Lock()
		b.release()
		b.mu.Unlock()
	}
	return b.rc.Close()
}

func (b *limitedBody) tooLarge() error {
	return fmt.Errorf("%w: more than %d MiB, the most infscale reads of one answer (is the URL a Prometheus API root? else narrow the query's selector or range)", ErrAnswerTooLarge, b.max>>20)
}
