package load

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// loadingModel is llama.cpp's server's answer to every request while it
// loads its model (503, type unavailable_error).
const loadingModel = `{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`

// oneToken streams a completion of one token, as a ready server does.
func oneToken(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprint(w, "data: {\"choices\":[{\"text\":\"a\",\"finish_reason\":\"length\"}]}\n\ndata: [DONE]\n\n")
}

// fastReady makes WaitReady check every 10 ms for the test.
func fastReady(t *testing.T) {
	old := readyInterval
	readyInterval = 10 * time.Millisecond
	t.Cleanup(func() { readyInterval = old })
}

// TestWaitReadyLlamaCppLoading: llama.cpp's server answers 503 "Loading
// model" to GET /v1/models and to every request while it loads. WaitReady
// asks again until it lists the model (the third GET here), says once
// what it waits for, quoting the server's answer (load's advice, to wait,
// left out: it is waiting), then sends one
// request of one token and returns the model listed.
func TestWaitReadyLlamaCppLoading(t *testing.T) {
	fastReady(t)
	var gets, posts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			if gets.Add(1) <= 2 {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusServiceUnavailable)
				fmt.Fprint(w, loadingModel)
				return
			}
			fmt.Fprint(w, `{"object":"list","data":[{"id":"qwen.gguf","object":"model"}]}`)
			return
		}
		posts.Add(1)
		oneToken(w)
	}))
	defer srv.Close()
	var said []string
	model, err := WaitReady(t.Context(), Config{URL: srv.URL}, time.Minute, func(err error) { said = append(said, err.Error()) })
	if err != nil || model != "qwen.gguf" {
		t.Fatalf("WaitReady: %q, %v; want qwen.gguf, nil", model, err)
	}
	if gets.Load() != 3 || posts.Load() != 1 {
		t.Errorf("%d GETs of /v1/models and %d requests; want 3 and 1", gets.Load(), posts.Load())
	}
	want := "GET " + srv.URL + "/v1/models: 503 Service Unavailable: " + loadingModel // the answer, without load's advice
	if len(said) != 1 || said[0] != want {
		t.Errorf("waiting said %q; want once %q", said, want)
	}
}

// TestWaitReadyTimesOut: a server that stays 503 is an error after the
// timeout (50 ms: the checks at 0, 10, ..., 50 ms), naming the flag and
// quoting the last answer; errors.Is ErrNotReady.
func TestWaitReadyTimesOut(t *testing.T) {
	fastReady(t)
	base := statusServer(t, http.StatusServiceUnavailable, loadingModel)
	start := time.Now()
	_, err := WaitReady(t.Context(), Config{URL: base}, 50*time.Millisecond, nil)
	took := time.Since(start)
	want := "load: the server was not ready within --ready-check-timeout 50ms; the last check: GET " + base + "/v1/models: 503 Service Unavailable: " + loadingModel +
		" (check the server's log and the URL's host and port, or give a longer --ready-check-timeout)"
	if err == nil || err.Error() != want || !errors.Is(err, ErrNotReady) {
		t.Errorf("error %v\nwant %s, errors.Is ErrNotReady", err, want)
	}
	if took < 50*time.Millisecond || took > 5*time.Second {
		t.Errorf("took %v; want the timeout, 50ms, and not much more", took)
	}
}

// TestWaitReadyServedModelName: with the model given, /v1/models is not
// asked; the check is the run's endpoint (chat here) until it answers
// other than 503: a gateway's 503 twice, then a stream.
func TestWaitReadyServedModelName(t *testing.T) {
	fastReady(t)
	var gets, posts atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			gets.Add(1)
			http.NotFound(w, r)
			return
		}
		if posts.Add(1) <= 2 {
			http.Error(w, "no healthy upstream", http.StatusServiceUnavailable)
			return
		}
		oneToken(w)
	}))
	defer srv.Close()
	var said []string
	model, err := WaitReady(t.Context(), Config{URL: srv.URL, Model: "m", Chat: true}, time.Minute, func(err error) { said = append(said, err.Error()) })
	if err != nil || model != "m" || gets.Load() != 0 || posts.Load() != 3 {
		t.Errorf("%q, %v after %d other requests and %d to the endpoint; want m, nil after 0 and 3", model, err, gets.Load(), posts.Load())
	}
	if want := "POST " + srv.URL + "/v1/chat/completions: 503 Service Unavailable: no healthy upstream"; len(said) != 1 || said[0] != want {
		t.Errorf("waiting said %q; want once %q", said, want)
	}
}

// TestWaitReadyConnectionRefused: vLLM listens only once its model is
// loaded: the checks find nothing listening (connection refused) until the
// server starts listening at the URL's port, 100 ms later.
func TestWaitReadyConnectionRefused(t *testing.T) {
	fastReady(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"llama","max_model_len":8192}]}`)
			return
		}
		oneToken(w)
	})}
	defer srv.Close()
	go func() {
		time.Sleep(100 * time.Millisecond)
		if ln, err := net.Listen("tcp", addr); err == nil {
			_ = srv.Serve(ln)
		}
	}()
	var said []string
	model, err := WaitReady(t.Context(), Config{URL: "http://" + addr}, 10*time.Second, func(err error) { said = append(said, err.Error()) })
	if err != nil || model != "llama" {
		t.Fatalf("WaitReady: %q, %v; want llama, nil", model, err)
	}
	if want := `finding the model: Get "http://` + addr + `/v1/models": dial tcp ` + addr + ": connect: connection refused"; len(said) != 1 || said[0] != want {
		t.Errorf("waiting said %q; want once %q", said, want)
	}
}

// TestWaitReadyEndsOnOtherAnswers: a check's answer that is no server
// starting ends the wait at once, after one check: a 404 of the endpoint
// (a wrong --served-model-name or --endpoint) is the run's to report, on
// every request; a 401 of /v1/models is DiscoverModel's error.
func TestWaitReadyEndsOnOtherAnswers(t *testing.T) {
	fastReady(t)
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		http.Error(w, `{"error":{"message":"The model `+"`x`"+` does not exist."}}`, http.StatusNotFound)
	}))
	defer srv.Close()
	if model, err := WaitReady(t.Context(), Config{URL: srv.URL, Model: "x"}, time.Minute, nil); err != nil || model != "x" || n.Load() != 1 {
		t.Errorf("a 404: %q, %v after %d requests; want x, nil after 1", model, err, n.Load())
	}
	base := statusServer(t, http.StatusUnauthorized, `{"error":"Unauthorized"}`)
	_, err := WaitReady(t.Context(), Config{URL: base}, time.Minute, nil)
	if want := "load: GET " + base + `/v1/models: 401 Unauthorized: {"error":"Unauthorized"} (` + noKeyHint + ")"; err == nil || err.Error() != want {
		t.Errorf("a 401: %v\nwant %s", err, want)
	}
}

// TestWaitReadyInterrupted: an interrupt ends the wait at once with the
// context's error.
func TestWaitReadyInterrupted(t *testing.T) {
	base := statusServer(t, http.StatusServiceUnavailable, loadingModel)
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := WaitReady(ctx, Config{URL: base}, time.Hour, nil); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 5*time.Second {
		t.Errorf("%v after %v; want the context's error at once", err, time.Since(start))
	}
}

// TestMaxModelLenModelNotListed: a --served-model-name that GET
// /v1/models does not list gave 0 and no error, so --calibrate went on as
// if the server gave no max_model_len, silently. It is
// ErrMaxModelLenUnknown naming the ids listed (the first five).
func TestMaxModelLenModelNotListed(t *testing.T) {
	base := statusServer(t, 200, `{"object":"list","data":[{"id":"llama-8b","max_model_len":8192}]}`)
	n, err := MaxModelLen(t.Context(), http.DefaultClient, base, "llama", nil, nil)
	want := "load: GET " + base + `/v1/models lists only "llama-8b", not "llama" (a vLLM answers 404 to a model it does not serve; a llama.cpp server of one model takes any name): the server's max_model_len is unknown`
	if n != 0 || err == nil || err.Error() != want || !errors.Is(err, ErrMaxModelLenUnknown) {
		t.Errorf("%d, %v\nwant 0, %s", n, err, want)
	}
	base = statusServer(t, 200, `{"data":[{"id":"a"},{"id":"b"},{"id":"c"},{"id":"d"},{"id":"e"},{"id":"f"},{"id":"g"}]}`)
	_, err = MaxModelLen(t.Context(), http.DefaultClient, base, "m", nil, nil)
	if want := `lists only "a", "b", "c", "d", "e" and 2 more, not "m"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("seven models: %v; want %q", err, want)
	}
	base = statusServer(t, 200, `{"object":"list","data":[]}`)
	_, err = MaxModelLen(t.Context(), http.DefaultClient, base, "m", nil, nil)
	if want := `lists no model, not "m"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("no model: %v; want %q", err, want)
	}
}

// TestWaitReadyHangingServerBounded: a server that lists the model but
// takes the check's request and never answers (a gateway holding it) is
// not waited for past --ready-check-timeout: the request is cut at what is
// left of 200ms, not at --timeout's 5 minutes, and the error says the
// wait's limit and that the last check had no answer within it.
func TestWaitReadyHangingServerBounded(t *testing.T) {
	fastReady(t)
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
			return
		}
		_, _ = io.Copy(io.Discard, r.Body) // then the server sees the client leave
		select {
		case <-r.Context().Done():
		case <-done:
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(done) }) // before srv.Close, which waits for the handler
	start := time.Now()
	_, err := WaitReady(t.Context(), Config{URL: srv.URL, Timeout: 5 * time.Minute}, 200*time.Millisecond, nil)
	took := time.Since(start)
	wantPrefix := "load: the server was not ready within --ready-check-timeout 200ms; the last check: POST " + srv.URL + "/v1/"
	wantPart := ": no answer within the --ready-check-timeout left (check the server's log"
	if err == nil || !errors.Is(err, ErrNotReady) || !strings.HasPrefix(err.Error(), wantPrefix) || !strings.Contains(err.Error(), wantPart) {
		t.Errorf("error %v\nwant %s...%s, errors.Is ErrNotReady", err, wantPrefix, wantPart)
	}
	if took < 200*time.Millisecond || took > 5*time.Second {
		t.Errorf("took %v; want the 200ms of --ready-check-timeout and not much more (not --timeout's 5m)", took)
	}
}
