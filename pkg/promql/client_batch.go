package promql

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/internal/crashlog"
)

// taggedValue is one sample of a batched query's answer: the branch index
// its TargetLabel names (tagIndex; -1 when absent or not an index) and its
// float value (NaN for a native histogram sample, which has no float
// value), and its time.
type taggedValue struct {
	target int
	value  float64
	at     float64 // the sample's time, unix seconds (Prometheus: the evaluation time)
}

// batchAPI is implemented by *Client: an instant query whose vector answer
// is reduced to taggedValues. Evaluate uses it for batched queries when
// its API has it and API.Instant otherwise (fakes in tests).
type batchAPI interface {
	instantTagged(ctx context.Context, q queryText, formLen int, t time.Time) ([]taggedValue, []string, error)
}

// instantTagged is Instant for a batched query, on the hot path of a serve
// cycle (1,000 targets: a query text of ~270 kB, an answer of ~1,000
// samples). The request goes through the HTTP client and round tripper of
// client_golang's api.Client, like Instant, but:
//   - the form body is written part by part while it is sent (formReader:
//     a batch's text is never held whole), not built as a string first
//     (url.Values.Encode makes two ~400 kB copies per query);
//   - the answer is decoded into the two fields Evaluate reads (the
//     TargetLabel value and the float value), not into client_golang's
//     model.Vector of label maps (about 1 kB of garbage per sample).
//   - the answer is read into a reused buffer (do), not a new doubling one.
//
// formLen is q's form-encoded length (formLenOf) when the caller has it,
// else 0. Errors name the query by q.short().
//
// Errors are the *v1.Error values client_golang's v1 API returns for the
// same status and body (v1's apiClientImpl.Do), wrapped in *QueryError by
// the same classify, and 403, 405 and 501 are retried as GET as v1's
// DoGetFallback does: a batch fails with the same Reason either way
// (TestBatchClientReasons).
func (c *Client) instantTagged(ctx context.Context, q queryText, formLen int, t time.Time) ([]taggedValue, []string, error) {
	query := q.short()
	ctx, cancel, _ := c.context(ctx)
	defer cancel()
	pm := &partialMark{}
	ctx = context.WithValue(ctx, partialKey{}, pm)
	u := c.http.URL("/api/v1/query", nil)
	params := u.Query() // parameters of the configured URL, as v1 sends them
	params.Del("query")
	if c.timeout > 0 {
		params.Set("timeout", c.timeout.String())
	}
	params.Set("time", strconv.FormatFloat(float64(t.Unix())+float64(t.Nanosecond())/1e9, 'f', -1, 64))
	tail := "&" + params.Encode()

	req, err := http.NewRequest(http.MethodPost, u.String(), nil)
	if err != nil {
		return nil, nil, &QueryError{Reason: ReasonBadData, Query: query, Err: err}
	}
	req.Body, _ = newFormBody(q, tail)()
	req.GetBody = newFormBody(q, tail)
	if formLen <= 0 {
		formLen = formLenOf(q)
	}
	req.ContentLength = int64(len("query=") + formLen + len(tail))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header["Idempotency-Key"] = nil // retry on network errors, as v1 does
	resp, body, err := c.do(ctx, req)
	if err == nil && (resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusMethodNotAllowed || resp.StatusCode == http.StatusNotImplemented) {
		c.answers.put(body)
		body = nil
		params.Set("query", textString(q))
		u.RawQuery = params.Encode()
		if req, err = http.NewRequest(http.MethodGet, u.String(), nil); err == nil {
			resp, body, err = c.do(ctx, req)
		}
	}
	if err != nil {
		// As Instant's: a timeout of the client's own says the limit and
		// the knob (it said "context deadline exceeded" alone).
		return nil, nil, c.queryError(ctx, query, err)
	}
	if rerr := redirectedAway(req, resp); rerr != nil && resp.StatusCode/100 == 2 {
		if _, _, object := envelopeStatus(body.Bytes()); !object {
			c.answers.put(body)
			return nil, nil, &QueryError{Reason: ReasonBadResponse, Query: query, Err: rerr}
		}
	}
	vals, warn, err := decodeTagged(resp.StatusCode, body.Bytes())
	c.answers.put(body) // decodeTagged keeps no reference to it
	if err != nil {
		return nil, warn, &QueryError{Reason: classify(err), Query: query, Err: err}
	}
	for _, v := range vals {
		if err := answerTime(v.at, t); err != nil {
			return nil, warn, &QueryError{Reason: ReasonBadResponse, Query: query, Err: err}
		}
	}
	if pm.seen.Load() {
		warn = append(warn, PartialVictoriaMetrics)
	}
	return vals, warn, nil
}

// do is api.Client.Do (client_golang's httpClient: the response, its
// body read whole, and ctx.Err() if ctx ends first) with the body read
// into a buffer from c.answers instead of a new bytes.Buffer that doubles
// from 512 bytes: at 10,000 targets a batched answer is about 1 MB, and
// the doublings were about 10 MB of garbage a cycle. The caller gives the
// buffer back with c.answers.put once the body is decoded; it is nil when
// err is not.
func (c *Client) do(ctx context.Context, req *http.Request) (*http.Response, *bytes.Buffer, error) {
	resp, err := c.hc.Do(req.WithContext(ctx))
	if err != nil {
		return nil, nil, err
	}
	buf := c.answers.get()
	read := make(chan error, 1)
	go func() {
		defer crashlog.Recover() // bytes.Buffer's ErrTooLarge
		_, err := buf.ReadFrom(resp.Body)
		read <- err
	}()
	select {
	case <-ctx.Done():
		resp.Body.Close()
		return resp, nil, ctx.Err() // buf may still be written: not reused
	case err := <-read:
		resp.Body.Close()
		if err != nil {
			return resp, nil, err
		}
		return resp, buf, nil
	}
}

// answerBufs are the buffers batched answers are read into, reused
// across queries and cycles; a new or reused buffer is grown to the last
// answer's size first, so an answer of about the same size is read
// without growing.
type answerBufs struct {
	pool sync.Pool
	last atomic.Int64 // bytes of the last answer given back
}

func (a *answerBufs) get() *bytes.Buffer {
	b, _ := a.pool.Get().(*bytes.Buffer)
	if b == nil {
		b = new(bytes.Buffer)
	}
	b.Grow(int(a.last.Load()) + bytes.MinRead)
	return b
}

// put gives b back (nil: nothing).
func (a *answerBufs) put(b *bytes.Buffer) {
	if b == nil {
		return
	}
	a.last.Store(int64(b.Len()))
	b.Reset()
	a.pool.Put(b)
}

// taggedResponse is the envelope of /api/v1/query with only the fields
// Evaluate reads.
type taggedResponse struct {
	Status    string       `json:"status"`
	ErrorType v1.ErrorType `json:"errorType"`
	Error     string       `json:"error"`
	Warnings  []string     `json:"warnings"`
	Data      *struct {
		ResultType string `json:"resultType"`
		// Result is decoded once ResultType is known to be a vector's:
		// a string's or a scalar's [<time>, "<value>"] read as a vector
		// said only "cannot unmarshal number into ... taggedSample".
		Result json.RawMessage `json:"result"`
	} `json:"data"`
}

type taggedSample struct {
	// Metric keeps only TargetLabel. (encoding/json also matches a label
	// spelled in another case, e.g. INFSCALE_TARGET; no query of infscale
	// makes one, and a user query must not produce TargetLabel at all.)
	Metric struct {
		Target string `json:"infscale_target"`
	} `json:"metric"`
	Value *samplePair `json:"value"`
	// Histogram is a native histogram sample's: no float value (NaN), as
	// client_golang's v1 path reads it even beside a "value".
	Histogram json.RawMessage `json:"histogram"`
}

// samplePair decodes [<unix time>, "<value>"].
type samplePair struct{ at, value float64 }

func (p *samplePair) UnmarshalJSON(b []byte) error {
	s := strings.TrimSpace(string(b))
	comma := strings.LastIndexByte(s, ',')
	if len(s) < 2 || s[0] != '[' || s[len(s)-1] != ']' || comma < 0 {
		return fmt.Errorf("sample value %.40q: want [<time>, \"<value>\"]", s)
	}
	v := strings.TrimSpace(s[comma+1 : len(s)-1])
	if len(v) < 2 || v[0] != '"' || v[len(v)-1] != '"' {
		return fmt.Errorf("sample value %.40q: want a quoted number", v)
	}
	f, err := strconv.ParseFloat(v[1:len(v)-1], 64)
	if err != nil {
		return fmt.Errorf("sample value %.40q: %w", v, err)
	}
	at, err := strconv.ParseFloat(strings.TrimSpace(s[1:comma]), 64)
	if err != nil {
		return fmt.Errorf("sample time %.40q: %w", s[1:comma], err)
	}
	*p = samplePair{at: at, value: f}
	return nil
}

// decodeTagged maps an /api/v1/query answer to taggedValues (through
// decodeVector when it takes the body, else encoding/json), or to the
// error client_golang's v1 API returns for it (v1 apiClientImpl.Do: 400 and
// 422 carry Prometheus's errorType; other non-2xx codes are ErrClient or
// ErrServer with the body as Detail; an undecodable or non-vector body is
// ErrBadResponse).
func decodeTagged(code int, body []byte) ([]taggedValue, []string, error) {
	var r taggedResponse
	if code/100 != 2 {
		apiErr := code == http.StatusBadRequest || code == http.StatusUnprocessableEntity
		if !apiErr || json.Unmarshal(body, &r) != nil {
			typ, msg := v1.ErrBadResponse, fmt.Sprintf("bad response code %d", code)
			switch code / 100 {
			case 4:
				typ, msg = v1.ErrClient, fmt.Sprintf("client error: %d", code)
			case 5:
				typ, msg = v1.ErrServer, fmt.Sprintf("server error: %d", code)
			}
			return nil, nil, &v1.Error{Type: typ, Msg: msg, Detail: string(body)}
		}
		if r.Status == "success" {
			return nil, r.Warnings, &v1.Error{Type: v1.ErrBadResponse, Msg: "inconsistent body for response code"}
		}
		if r.ErrorType == "" {
			r.ErrorType = v1.ErrClient
		}
		if r.Error == "" {
			r.Error = fmt.Sprintf("client error: %d", code)
		}
		return nil, r.Warnings, &v1.Error{Type: r.ErrorType, Msg: r.Error}
	}
	if vals, warn, ok := decodeVector(body); ok {
		return vals, warn, nil
	}
	return decodeTaggedJSON(body)
}

// decodeTaggedJSON is decodeTagged for a 2xx answer through encoding/json.
func decodeTaggedJSON(body []byte) ([]taggedValue, []string, error) {
	var r taggedResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, nil, &v1.Error{Type: v1.ErrBadResponse, Msg: err.Error()}
	}
	if r.Status == "error" {
		return nil, r.Warnings, &v1.Error{Type: r.ErrorType, Msg: r.Error}
	}
	if r.Status != "success" {
		_, found, _ := envelopeStatus(body)
		return nil, r.Warnings, notAnAPIAnswer(r.Status, found)
	}
	if r.Data == nil {
		return nil, r.Warnings, &v1.Error{Type: v1.ErrBadResponse, Msg: noData("").Err.Error()}
	}
	if r.Data.ResultType != model.ValVector.String() {
		return nil, r.Warnings, &v1.Error{Type: v1.ErrBadResponse,
			Msg: fmt.Sprintf("result type %q, want vector (the query's type)", r.Data.ResultType)}
	}
	var result []taggedSample
	if err := json.Unmarshal(r.Data.Result, &result); err != nil && len(r.Data.Result) > 0 {
		return nil, r.Warnings, &v1.Error{Type: v1.ErrBadResponse, Msg: err.Error()}
	}
	out := make([]taggedValue, len(result))
	for i, s := range result {
		// A native histogram sample has no float value (NaN) and no time
		// read (NaN).
		out[i] = taggedValue{target: tagIndex(s.Metric.Target), value: math.NaN(), at: math.NaN()}
		if s.Value != nil && (len(s.Histogram) == 0 || string(s.Histogram) == "null") {
			out[i].value, out[i].at = s.Value.value, s.Value.at
		}
	}
	return out, r.Warnings, nil
}
