package promql

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
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

// ErrAnswerTooLarge is the error of an answer past its bound (errors.Is).
var ErrAnswerTooLarge = errors.New("answer too large")

// limitAnswers is a RoundTripper whose responses' bodies fail with
// ErrAnswerTooLarge past the bound of their query's kind (query_range:
// MaxRangeAnswerBytes, anything else MaxInstantAnswerBytes). It also
// notes a 429's or 503's Retry-After in the request context's retryAfter,
// if any (client_golang's errors do not keep the headers), and an answer
// VictoriaMetrics marked partial in the context's partialMark, if any
// (client_golang does not read that key).
type limitAnswers struct{ rt http.RoundTripper }

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
	if ra, ok := req.Context().Value(retryAfterKey{}).(*retryAfter); ok &&
		(resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable) {
		ra.set(resp.Header.Get("Retry-After"), time.Now())
	}
	max := int64(MaxInstantAnswerBytes)
	if strings.HasSuffix(req.URL.Path, "/query_range") {
		max = MaxRangeAnswerBytes
	}
	lb := &limitedBody{rc: resp.Body, left: max, max: max, declared: resp.ContentLength}
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
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }

func (b *limitedBody) tooLarge() error {
	return fmt.Errorf("%w: more than %d MiB, the most infscale reads of one answer (is the URL a Prometheus API root? else narrow the query's selector or range)", ErrAnswerTooLarge, b.max>>20)
}
