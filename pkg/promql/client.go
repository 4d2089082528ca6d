package promql

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
)

// API is what infscale needs from a Prometheus server: instant and range
// queries. *Client implements it over the HTTP API; tests substitute fakes.
// Errors are *QueryError with a Reason. Warnings are Prometheus's
// non-fatal annotations (e.g. "PromQL info: metric might not be a counter").
type API interface {
	// Instant evaluates query at t. A scalar result comes back as one
	// sample without labels.
	Instant(ctx context.Context, query string, t time.Time) (model.Vector, []string, error)
	// Range evaluates query at start, start+step, ... <= end.
	Range(ctx context.Context, query string, start, end time.Time, step time.Duration) (model.Matrix, []string, error)
}

// MaxPointsPerSeries is Prometheus's limit on points per series of one
// range query (web/api/v1: "exceeded maximum resolution of 11,000 points
// per timeseries"). Client.Range splits longer ranges.
const MaxPointsPerSeries = 11000

// Client queries a Prometheus server through client_golang.
type Client struct {
	api     v1.API
	http    api.Client   // the same client, for batched queries (client_batch.go)
	hc      *http.Client // api.Client's HTTP client: batched answers are read into answerBufs
	timeout time.Duration
	// timeoutName is what sets timeout (ClientConfig.TimeoutName).
	timeoutName string
	retries     int
	onRetry     func(query, cause string, wait time.Duration, ask, asks int)
	answers     answerBufs
	// rangeMax bounds one range answer (ClientConfig.MaxRangeAnswerBytes).
	rangeMax int64
	// answered is set once a query has been answered: a connection
	// refused after it is the server restarting, not a wrong address.
	// Shared with the clients ForHistory makes (one server).
	answered *atomic.Bool
	// clock is the server's clock offset (ServerClock), shared with the
	// clients ForHistory makes.
	clock *serverClock
}

// ClientConfig configures NewClient.
type ClientConfig struct {
	// URL is the server's base URL, e.g. http://prometheus:9090.
	URL string
	// RoundTripper carries auth and TLS (build it with
	// prometheus/common/config.NewRoundTripperFromConfig); nil uses
	// api.DefaultRoundTripper.
	RoundTripper http.RoundTripper
	// Timeout bounds each query: the client's context deadline, and
	// Prometheus's own timeout parameter so the server stops evaluating
	// too. 0 means no limit beyond the caller's context.
	Timeout time.Duration
	// TimeoutName names what sets Timeout, e.g. "--query-timeout", for a
	// timeout's error to say what to raise; "" says "raise it".
	TimeoutName string
	// Retries is how many times a query (Range and Instant: the history
	// for backtest, profile, tune) is asked again when Prometheus could not
	// answer it (see Retryable: a 5xx other than its query timeout, a
	// 429, a cut connection; a refused connection once the server has
	// answered a query: it is restarting), after the answer's Retry-After
	// (at most MaxRetryWait) or else 1 s, 2 s, 4 s, ... 0: never (serve,
	// whose next cycle asks again, and whose start would wait on a down
	// Prometheus).
	Retries int
	// OnRetry, when set, is called before each wait of a retry: the query,
	// why it is asked again (the answer, or the connection's error), the
	// wait, and the ask that follows of the most (2 of 6, ...). Five waits
	// of up to MaxRetryWait would otherwise pass in silence.
	OnRetry func(query, cause string, wait time.Duration, ask, asks int)
	// MaxRangeAnswerBytes bounds one range answer; 0 is
	// MaxRangeAnswerBytes. serve's decision client, whose range queries
	// (the rebuild) read one of its own series a chunk, gives
	// MaxInstantAnswerBytes: a source answering without end filled 2 GiB
	// (3.4 GB of RSS) at its start. ForHistory's clients read up to
	// MaxRangeAnswerBytes.
	MaxRangeAnswerBytes int64
	// Now is the clock the server's answers' Date headers are compared
	// with (ServerClock); nil: time.Now. Tests fake a clock off the
	// server's with it.
	Now func() time.Time
}

// HistoryTimeout and HistoryRetries are the per-query timeout and the
// retries (ClientConfig.Timeout, ClientConfig.Retries) of queries over a
// history: backtest's, profile's and tune's defaults, and serve's
// in-process tuning (Client.ForHistory). A range over a week takes
// Prometheus far longer than a decision's instant query, and minutes of
// queries are not lost to a hiccup or a restart of half a minute (1 s,
// 2 s, 4 s, 8 s, 16 s between the asks).
const (
	HistoryTimeout = 2 * time.Minute
	HistoryRetries = 5
)

// ForHistory returns a Client on c's connection, auth and TLS with
// another per-query timeout and retries: serve's decisions ask with
// prometheus.timeout and no retry (the next cycle asks again), its tuning
// of a week of history with HistoryTimeout and HistoryRetries. c's
// timeout and retries are not changed; whether the server has answered
// is shared (a connection refused after an answer to either is a
// restart, asked again). A timeout's error names c's TimeoutName only when
// timeout is c's.
func (c *Client) ForHistory(timeout time.Duration, retries int) *Client {
	name := c.timeoutName // what sets c's timeout sets this one only when they are the same
	if timeout != c.timeout {
		name = ""
	}
	return &Client{api: c.api, http: c.http, hc: c.hc, timeout: timeout, timeoutName: name, retries: max(retries, 0), onRetry: c.onRetry, answered: c.answered, clock: c.clock, rangeMax: MaxRangeAnswerBytes}
}

// NewClient returns a Client for cfg. Errors: an unparsable URL.
func NewClient(cfg ClientConfig) (*Client, error) {
	rt := cfg.RoundTripper
	if rt == nil {
		rt = api.DefaultRoundTripper
	}
	clock := &serverClock{now: cfg.Now}
	if clock.now == nil {
		clock.now = time.Now
	}
	hc := &http.Client{Transport: limitAnswers{rt: latencyOffset{rt}, clock: clock}}
	c, err := api.NewClient(api.Config{Address: cfg.URL, Client: hc})
	if err != nil {
		return nil, fmt.Errorf("prometheus url %q: %w", cfg.URL, err)
	}
	rangeMax := cfg.MaxRangeAnswerBytes
	if rangeMax <= 0 {
		rangeMax = MaxRangeAnswerBytes
	}
	return &Client{api: v1.NewAPI(statusChecked{c}), http: c, hc: hc, timeout: cfg.Timeout, timeoutName: cfg.TimeoutName, retries: max(cfg.Retries, 0), onRetry: cfg.OnRetry, answered: new(atomic.Bool), clock: clock, rangeMax: rangeMax}, nil
}

// errClientTimeout is the cause of a query's context that the client's
// own timeout ended (Client.context), not a caller's deadline. net/http
// returns a context's cause as the request's error, so it reads and
// matches as context.DeadlineExceeded, which it wraps.
var errClientTimeout error = clientTimeout{}

type clientTimeout struct{}

func (clientTimeout) Error() string { return context.DeadlineExceeded.Error() }
func (clientTimeout) Unwrap() error { return context.DeadlineExceeded }

func (c *Client) context(ctx context.Context) (context.Context, context.CancelFunc, []v1.Option) {
	if c.timeout <= 0 {
		return ctx, func() {}, nil
	}
	ctx, cancel := context.WithTimeoutCause(ctx, c.timeout, errClientTimeout)
	return ctx, cancel, []v1.Option{v1.WithTimeout(c.timeout)}
}

// queryError classifies a failed query's err; a timeout says the
// client's timeout, the knob to turn (backtest's --query-timeout, serve's
// prometheus.timeout), not only "context deadline exceeded".
func (c *Client) queryError(ctx context.Context, query string, err error) *QueryError {
	r := classify(err)
	err = withCause(ctx, err)
	// The client's own deadline, not a caller's shorter one: told by the
	// context's cause. (It was told by the time since the query began,
	// taken after the deadline was set: a few microseconds short of the
	// timeout when the answer's wait ended on time, and then the line
	// said "context deadline exceeded" alone.)
	if r == ReasonTimeout && c.timeout > 0 && errors.Is(err, context.DeadlineExceeded) && errors.Is(context.Cause(ctx), errClientTimeout) {
		// Not the word again: the reason, said first, is "timeout".
		raise := "it"
		if c.timeoutName != "" {
			raise = c.timeoutName
		}
		err = fmt.Errorf("no answer in %s, the limit per query (raise %s, or shorten the range or simplify the query): %w", c.timeout, raise, err)
	}
	return &QueryError{Reason: r, Query: query, Err: err}
}

// Instant implements API. A native histogram sample's Value is NaN (no
// float value: unknown, as the batched path reads it). An answer whose
// samples are not at t (within MaxAnswerSkew) is refused,
// ReasonBadResponse, and so is an answer of another type than the query's
// (a scalar for a vector query).
// With ClientConfig.Retries it is asked again as Range is.
func (c *Client) Instant(ctx context.Context, query string, t time.Time) (model.Vector, []string, error) {
	return retried(ctx, c, query, func(ctx context.Context) (model.Vector, []string, error) {
		return c.instantOnce(ctx, query, t)
	})
}

func (c *Client) instantOnce(ctx context.Context, query string, t time.Time) (model.Vector, []string, error) {
	ctx, cancel, opts := c.context(ctx)
	defer cancel()
	v, warn, _, err := c.api.Query(ctx, query, t, opts...)
	if err != nil {
		return nil, warn, c.queryError(ctx, query, err)
	}
	if v == nil {
		return nil, warn, noData(query)
	}
	if want := resultTypeOf(query); want != model.ValNone && v.Type() != want {
		// Prometheus answers a query with its expression's type: another is
		// not its answer to this query (a proxy's, or a cache's).
		return nil, warn, &QueryError{Reason: ReasonBadResponse, Query: query,
			Err: fmt.Errorf("result type %s, want %s (the query's type)", v.Type(), want)}
	}
	switch r := v.(type) {
	case model.Vector:
		for _, s := range r {
			if err := answerTime(float64(s.Timestamp)/1e3, t); err != nil {
				return nil, warn, &QueryError{Reason: ReasonBadResponse, Query: query, Err: err}
			}
			if s.Histogram != nil {
				// A native histogram sample has no float value; client_golang
				// leaves Value 0, which read as 0 replicas or requests.
				s.Value = model.SampleValue(math.NaN())
			}
		}
		return r, warn, nil
	case *model.Scalar:
		if err := answerTime(float64(r.Timestamp)/1e3, t); err != nil {
			return nil, warn, &QueryError{Reason: ReasonBadResponse, Query: query, Err: err}
		}
		return model.Vector{{Metric: model.Metric{}, Value: r.Value, Timestamp: r.Timestamp}}, warn, nil
	default:
		return nil, warn, &QueryError{Reason: ReasonBadResponse, Query: query,
			Err: fmt.Errorf("result type %s, want vector or scalar", v.Type())}
	}
}

// noData is the error of a success answer without "data" (client_golang
// returns no value for it: its type was read as a nil interface's, a
// panic), which Prometheus never gives.
func noData(query string) *QueryError {
	return &QueryError{Reason: ReasonBadResponse, Query: query,
		Err: errors.New(`status "success" without "data": not a Prometheus answer (a proxy's or a stub's?); want {"status":"success","data":{"resultType":...,"result":[...]}}`)}
}

// resultTypeOf is the result type Prometheus answers query with (its
// expression's type: vector or scalar), or ValNone when the query does not
// parse (the server's parser, not ours, decides then) or is of another type
// (a range query's matrix, a string: Instant refuses those anyway).
func resultTypeOf(query string) model.ValueType {
	ex, err := pql.ParseExpr(query)
	if err != nil {
		return model.ValNone
	}
	switch ex.Type() {
	case parser.ValueTypeVector:
		return model.ValVector
	case parser.ValueTypeScalar:
		return model.ValScalar
	}
	return model.ValNone
}

// MaxAnswerSkew is how far from the evaluation time asked an instant
// query's answer may be (its samples' time, which Prometheus and the
// servers of its API set to the evaluation time) and still be read: 5 min,
// Prometheus's default lookback delta, beyond which Prometheus itself
// takes a sample for stale. A farther answer is another moment's (a
// caching proxy answering from an hour ago, a server whose clock is off):
// read as now it decided on old load. Refused, ReasonBadResponse.
const MaxAnswerSkew = 5 * time.Minute

// answerTime checks a sample time at (unix seconds) of an instant query's
// answer against the evaluation time t: nil within MaxAnswerSkew, or when
// at is NaN (no time read: a native histogram sample, whose value is
// unknown anyway).
func answerTime(at float64, t time.Time) error {
	asked := float64(t.UnixNano()) / 1e9
	if math.IsNaN(at) || math.Abs(at-asked) <= MaxAnswerSkew.Seconds() {
		return nil
	}
	d := time.Duration(min(math.Abs(at-asked), 1e9) * 1e9) // at most ~31 years: the text only
	if at > asked {
		return fmt.Errorf("answer evaluated at %s, %s after the time asked (%s): another moment's answer (a server that evaluates at its own clock, ahead of this one, not at the time asked?); an answer more than %s from it is not read",
			time.Unix(int64(at), 0).UTC().Format(time.RFC3339), d.Round(time.Second), t.UTC().Format(time.RFC3339), MaxAnswerSkew)
	}
	return fmt.Errorf("answer evaluated at %s, %s before the time asked (%s): another moment's answer (a cache in front of Prometheus?); an answer more than %s from it is not read",
		time.Unix(int64(at), 0).UTC().Format(time.RFC3339), d.Round(time.Second), t.UTC().Format(time.RFC3339), MaxAnswerSkew)
}

// Range implements API. A range of more than MaxPointsPerSeries steps is
// split into consecutive chunks, each one query, and the series are merged
// by label set in time order. step must be > 0 and end not before start.
// With ClientConfig.Retries each chunk is asked again while it fails
// Retryable.
func (c *Client) Range(ctx context.Context, query string, start, end time.Time, step time.Duration) (model.Matrix, []string, error) {
	if step <= 0 || end.Before(start) {
		return nil, nil, &QueryError{Reason: ReasonBadData, Query: query,
			Err: fmt.Errorf("range %s..%s step %s: need step > 0 and end >= start", start.Format(time.RFC3339), end.Format(time.RFC3339), step)}
	}
	var (
		warnings []string
		merged   = map[model.Fingerprint]*model.SampleStream{}
		order    []model.Fingerprint
	)
	for _, ch := range rangeChunks(start, end, step) {
		m, warn, err := retried(ctx, c, query, func(ctx context.Context) (model.Matrix, []string, error) {
			return c.rangeOnce(ctx, query, ch[0], ch[1], step)
		})
		warnings = append(warnings, warn...)
		if err != nil {
			return nil, warnings, err
		}
		for _, ss := range m {
			fp := ss.Metric.Fingerprint()
			have, ok := merged[fp]
			if !ok {
				merged[fp] = ss
				order = append(order, fp)
				continue
			}
			have.Values = append(have.Values, ss.Values...)
			have.Histograms = append(have.Histograms, ss.Histograms...)
		}
	}
	out := make(model.Matrix, 0, len(order))
	for _, fp := range order {
		out = append(out, merged[fp])
	}
	return out, warnings, nil
}

// MaxRetryWait caps the wait before a query is asked again
// (ClientConfig.Retries), whatever the answer's Retry-After says.
const MaxRetryWait = time.Minute

// Retryable reports whether a query that failed with err is asked again
// (ClientConfig.Retries): Prometheus answered that it could not
// answer now (ReasonUnavailable: a 5xx, as it does while it starts, or a
// 429) or the connection was cut, not because of the query (a timeout would
// time out again), the credentials (401, 403, 407), the URL (404) or an
// address where nothing listens, or with a certificate or a scheme that
// does not fit (TransportHint: refused, no such host, TLS; said at once;
// a Client that has had an answer asks again after a refusal, see
// ClientConfig.Retries).
func Retryable(err error) bool {
	qe, ok := errors.AsType[*QueryError](err)
	if !ok || qe.Reason != ReasonUnavailable {
		return false
	}
	if ae, ok := errors.AsType[*v1.Error](err); ok {
		s := clientStatus(ae)
		return s == 0 || s == http.StatusTooManyRequests
	}
	// Where the query was sent (a host that does not resolve, nothing
	// listening, a certificate or a scheme that does not fit): asking
	// again gets the same, after half a minute of waits.
	return TransportHint(err) == ""
}

// refused reports whether err is a connection refused while Prometheus
// could not answer (ReasonUnavailable): nothing listens at the address,
// as while the server restarts.
func refused(err error) bool {
	qe, ok := errors.AsType[*QueryError](err)
	return ok && qe.Reason == ReasonUnavailable && errors.Is(err, syscall.ECONNREFUSED)
}

// retried is once (one query, named query), asked again up to c.retries
// times while it fails with a Retryable error: after the answer's
// Retry-After (at most MaxRetryWait), else 1 s doubling. The wait ends
// with ctx. An answer VictoriaMetrics marked partial gets the warning
// PartialVictoriaMetrics.
func retried[T any](ctx context.Context, c *Client, query string, once func(context.Context) (T, []string, error)) (T, []string, error) {
	backoff, began := time.Second, time.Now()
	for attempt := 0; ; attempt++ {
		ra, pm := &retryAfter{}, &partialMark{}
		v, warn, err := once(context.WithValue(context.WithValue(ctx, retryAfterKey{}, ra), partialKey{}, pm))
		if err == nil {
			c.answered.Store(true)
			if pm.seen.Load() {
				warn = append(warn, PartialVictoriaMetrics)
			}
			return v, warn, err
		}
		if !Retryable(err) && !(c.answered.Load() && refused(err)) {
			return v, warn, err
		}
		if attempt >= c.retries {
			if qe, ok := err.(*QueryError); ok && attempt > 0 {
				qe.Err = fmt.Errorf("%w (asked %d times over %s)", qe.Err, attempt+1, time.Since(began).Round(time.Second))
			}
			return v, warn, err
		}
		wait, ok := ra.get()
		if !ok {
			wait, backoff = backoff, 2*backoff
		}
		wait = min(wait, MaxRetryWait)
		if c.onRetry != nil {
			c.onRetry(query, retryCause(err), wait, attempt+2, c.retries+1)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			var zero T
			return zero, warn, c.queryError(ctx, query, ctx.Err())
		case <-t.C:
		}
	}
}

func (c *Client) rangeOnce(ctx context.Context, query string, start, end time.Time, step time.Duration) (model.Matrix, []string, error) {
	ctx, cancel, opts := c.context(ctx)
	defer cancel()
	// A matrix holds at most this many points a series (Prometheus's grid
	// from start by step to end): the answer is bounded by it (rangeScan).
	steps := int64(end.Sub(start)/step) + 1
	ctx = context.WithValue(ctx, rangeBoundKey{}, rangeBound{max: c.rangeMax, steps: steps})
	v, warn, _, err := c.api.QueryRange(ctx, query, v1.Range{Start: start, End: end, Step: step}, opts...)
	if err != nil {
		return nil, warn, c.queryError(ctx, query, err)
	}
	if v == nil {
		return nil, warn, noData(query)
	}
	m, ok := v.(model.Matrix)
	if !ok {
		return nil, warn, &QueryError{Reason: ReasonBadResponse, Query: query,
			Err: fmt.Errorf("result type %s, want matrix", v.Type())}
	}
	if err := matrixShape(m, start, end); err != nil {
		return nil, warn, &QueryError{Reason: ReasonBadResponse, Query: query, Err: err}
	}
	return m, warn, nil
}

// matrixShape refuses a range query's answer that Prometheus never gives:
// two series with one label set, or a series whose samples are not in
// strictly increasing time order inside [start, end]. Read as history, such
// samples go back in time, and every step back reads as a counter reset
// (54 million requests reconstructed from a 45,000-request hour).
func matrixShape(m model.Matrix, start, end time.Time) error {
	// Prometheus rounds start and end to milliseconds: 1 ms of slack.
	lo, hi := model.TimeFromUnixNano(start.UnixNano())-1, model.TimeFromUnixNano(end.UnixNano())+1
	seen := make(map[model.Fingerprint]bool, len(m))
	for _, ss := range m {
		fp := ss.Metric.Fingerprint()
		if seen[fp] {
			return seriesTwiceError{ss.Metric.String()}
		}
		seen[fp] = true
		for i, p := range ss.Values {
			if p.Timestamp < lo || p.Timestamp > hi {
				return fmt.Errorf("series %s: sample at %s outside the range asked, %s..%s: not a Prometheus range query result",
					ss.Metric, p.Timestamp.Time().UTC().Format(time.RFC3339), start.UTC().Format(time.RFC3339), end.UTC().Format(time.RFC3339))
			}
			if i > 0 && p.Timestamp <= ss.Values[i-1].Timestamp {
				return fmt.Errorf("series %s: sample at %s after one at %s: want samples in increasing time order, as Prometheus answers",
					ss.Metric, p.Timestamp.Time().UTC().Format(time.RFC3339), ss.Values[i-1].Timestamp.Time().UTC().Format(time.RFC3339))
			}
		}
	}
	return nil
}

// rangeChunks splits [start, end] on the step grid into pieces of at most
// MaxPointsPerSeries points: piece i starts at start + i*MaxPointsPerSeries*step.
func rangeChunks(start, end time.Time, step time.Duration) [][2]time.Time {
	var out [][2]time.Time
	span := time.Duration(MaxPointsPerSeries-1) * step
	for s := start; !s.After(end); s = s.Add(span + step) {
		e := s.Add(span)
		if e.After(end) {
			e = end
		}
		out = append(out, [2]time.Time{s, e})
	}
	return out
}

// retryCause is why a query is asked again, without the query: the
// answer's message (server error: 503), else the underlying error.
func retryCause(err error) string {
	if ae, ok := errors.AsType[*v1.Error](err); ok {
		return ae.Msg
	}
	if qe, ok := errors.AsType[*QueryError](err); ok && qe.Err != nil {
		return qe.Err.Error()
	}
	return err.Error()
}
