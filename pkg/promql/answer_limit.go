package promql

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
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
// MaxRangeAnswerBytes, anything else MaxInstantAnswerBytes).
type limitAnswers struct{ rt http.RoundTripper }

func (l limitAnswers) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := l.rt.RoundTrip(req)
	if err != nil || resp.Body == nil {
		return resp, err
	}
	max := int64(MaxInstantAnswerBytes)
	if strings.HasSuffix(req.URL.Path, "/query_range") {
		max = MaxRangeAnswerBytes
	}
	resp.Body = &limitedBody{rc: resp.Body, left: max, max: max, declared: resp.ContentLength}
	return resp, nil
}

// limitedBody reads rc until more than max bytes came (or a declared
// Content-Length says they will), then fails.
type limitedBody struct {
	rc       io.ReadCloser
	left     int64
	max      int64
	declared int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	if b.declared > b.max || b.left < 0 {
		return 0, b.tooLarge()
	}
	if int64(len(p)) > b.left+1 {
		p = p[:b.left+1]
	}
	n, err := b.rc.Read(p)
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
