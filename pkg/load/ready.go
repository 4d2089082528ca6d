package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"time"
)

// ErrNotReady is wrapped by the errors of a server that is not ready to
// serve yet: nothing listens at the URL's port (vLLM listens once its
// model is loaded), the connection closed or no answer came, or it
// answered 502, 503 or 504 (llama.cpp's server answers 503 "Loading
// model" while it loads; a gateway one of them without a ready server
// behind it). WaitReady asks again after one.
var ErrNotReady = errors.New("the server is not ready")

// notReady is an error of ErrNotReady's: err, then advice ("": none) in
// parentheses. WaitReady says err alone while it waits.
type notReady struct {
	err    error
	advice string
}

func (e notReady) Error() string {
	if e.advice == "" {
		return e.err.Error()
	}
	return e.err.Error() + " (" + e.advice + ")"
}
func (e notReady) Is(target error) bool { return target == ErrNotReady }
func (e notReady) Unwrap() error        { return e.err }

// withoutAdvice is err's text without a notReady's advice (the answer
// alone) and without the "load: " before it.
func withoutAdvice(err error) string {
	var nr notReady
	if errors.As(err, &nr) {
		err = nr.err
	}
	return strings.TrimPrefix(err.Error(), "load: ")
}

// waitHint says how to wait for a server that is starting.
const waitHint = "--ready-check-timeout 10m waits up to 10 minutes for a server that is starting"

// notReadyHint is the advice after a 502, 503 or 504 of GET /v1/models.
const notReadyHint = "the server is not ready: llama.cpp's answers 503 while it loads the model, a gateway 502, 503 or 504 " +
	"without a ready server behind it; run load again once it is ready, or " + waitHint

// unavailable reports whether code is a server's or gateway's while it is
// not ready (502, 503, 504).
func unavailable(code int) bool {
	return code == http.StatusBadGateway || code == http.StatusServiceUnavailable || code == http.StatusGatewayTimeout
}

// refused reports whether err is a connection that could not be made
// (nothing listens at the port: refused, or no route).
func refused(err error) bool {
	op, ok := errors.AsType[*net.OpError](err)
	return ok && op.Op == "dial"
}

// closedEarly reports whether err is a connection closed or reset before
// an answer (a server starting up; kubectl port-forward to a pod whose
// server does not listen yet).
func closedEarly(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, syscall.ECONNRESET)
}

// readyInterval is how long WaitReady waits between its checks (vllm bench
// serve's ready check retries every 5 s; a check is one GET and one
// request of one token, cheap enough to ask every second).
var readyInterval = time.Second

// WaitReady waits up to timeout until the server of cfg (its URL, Header,
// Chat, Client; Client nil: NewClient's) is ready, as vllm bench serve's
// --ready-check-timeout-sec waits for its endpoint: each check finds the
// model with GET /v1/models when cfg.Model is "" (DiscoverModel), then
// sends the run's endpoint one request of one output token (not
// measured), bounded by cfg.Timeout (0: 5 min); a check whose answer is
// ErrNotReady's (nothing listens, no answer, 502, 503, 504) is repeated
// every second. It returns the model (cfg.Model, or the one discovered)
// once a check's request gets any other answer (a 404 or 400 is the run's
// to report, on every request), DiscoverModel's other errors at once, and
// after timeout an error wrapping ErrNotReady that quotes the last
// answer. waiting, if set, is called once, with that answer (without
// load's advice), when the first check finds the server not ready.
func WaitReady(ctx context.Context, cfg Config, timeout time.Duration, waiting func(error)) (string, error) {
	if cfg.Client == nil {
		cfg.Client = NewClient(1)
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = 5 * time.Minute
	}
	deadline := time.Now().Add(timeout)
	for first := true; ; first = false {
		model, err := cfg.check(ctx, deadline)
		switch {
		case err == nil:
			return model, nil
		case ctx.Err() != nil:
			return "", ctx.Err()
		case !errors.Is(err, ErrNotReady):
			return "", err
		}
		if first && waiting != nil {
			waiting(errors.New(withoutAdvice(err)))
		}
		if time.Now().Before(deadline) {
			t := time.NewTimer(min(readyInterval, time.Until(deadline)))
			select {
			case <-ctx.Done():
				t.Stop()
				return "", ctx.Err()
			case <-t.C:
			}
		}
		if !time.Now().Before(deadline) {
			return "", notReady{fmt.Errorf("load: the server was not ready within --ready-check-timeout %s; the last check: %s", timeout, withoutAdvice(err)),
				"check the server's log and the URL's host and port, or give a longer --ready-check-timeout"}
		}
	}
}

// check is one of WaitReady's checks: the model (DiscoverModel's when
// c.Model is ""), then one request of one output token, bounded by
// c.Timeout and by deadline (WaitReady's: a server that takes the
// connection and never answers is not waited for past it); an error
// wrapping ErrNotReady when either found the server not ready.
func (c Config) check(ctx context.Context, deadline time.Time) (string, error) {
	if c.Model == "" {
		m, err := DiscoverModel(ctx, c.Client, c.URL, c.Header, c.HeaderSources)
		if err != nil {
			return "", err
		}
		c.Model = m
	}
	bound, knob := c.Timeout, "--timeout "+c.Timeout.String()
	if rest := time.Until(deadline); rest < bound {
		bound, knob = max(rest, 0), "the --ready-check-timeout left"
	}
	rctx, cancel := context.WithTimeout(ctx, bound)
	defer cancel()
	path, req, err := c.newCompletion(rctx, job{prompt: 8, output: 1})
	if err != nil {
		return "", err
	}
	resp, err := c.Client.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		switch {
		case errors.Is(err, context.DeadlineExceeded):
			return "", notReady{fmt.Errorf("load: POST %s%s: no answer within %s", c.URL, path, knob), ""}
		case refused(err) || closedEarly(err):
			return "", notReady{redact(fmt.Errorf("load: %w", err), c.Header), ""}
		}
		return c.Model, nil // not a server starting: the run's requests say what it is
	}
	defer resp.Body.Close()
	if unavailable(resp.StatusCode) {
		return "", notReady{redact(fmt.Errorf("load: POST %s%s: %w", c.URL, path, statusError(resp, "", c.Header)), c.Header), ""}
	}
	// Read to the end (one token's stream), bounded: the connection is
	// reused, and a stream that does not end is the run's to time out.
	drained := time.AfterFunc(time.Second, cancel)
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	drained.Stop()
	return c.Model, nil
}
