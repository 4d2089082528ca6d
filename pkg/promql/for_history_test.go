package promql

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"
)

// TestForHistory: the history client asks with its own timeout and
// retries on the same connection, and the client it came from is not
// changed. A query answered in 500 ms fails under the decision client's
// 300 ms and is read under the history client's 2 s; a 503 (Retry-After
// 0) is asked again by the history client only.
func TestForHistory(t *testing.T) {
	const matrix = `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1767607200,"5"]]}]}}`
	var slow, fail atomic.Bool
	c, n := fakeProm(t, func(w http.ResponseWriter, r *http.Request) {
		if slow.Load() {
			time.Sleep(500 * time.Millisecond)
		}
		if fail.CompareAndSwap(true, false) {
			w.Header().Set("Retry-After", "0")
			http.Error(w, "restarting", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprint(w, matrix)
	})
	h := c.ForHistory(2*time.Second, 2)
	at := time.Unix(1767607200, 0)
	ctx := context.Background()

	slow.Store(true)
	if _, _, err := c.Range(ctx, "up", at, at, time.Minute); ReasonOf(err) != ReasonTimeout {
		t.Errorf("decision client, 500 ms answer under a 300 ms timeout: %v, want a timeout", err)
	}
	if m, _, err := h.Range(ctx, "up", at, at, time.Minute); err != nil || len(m) != 1 {
		t.Errorf("history client, 500 ms answer under a 2 s timeout: %v, %v; want the matrix", m, err)
	}
	slow.Store(false)

	fail.Store(true)
	n0 := n.Load()
	if _, _, err := c.Range(ctx, "up", at, at, time.Minute); ReasonOf(err) != ReasonUnavailable || n.Load()-n0 != 1 {
		t.Errorf("decision client, one 503: %v after %d requests, want unavailable after 1", err, n.Load()-n0)
	}
	fail.Store(true)
	n0 = n.Load()
	if m, _, err := h.Range(ctx, "up", at, at, time.Minute); err != nil || len(m) != 1 || n.Load()-n0 != 2 {
		t.Errorf("history client, one 503: %v, %v after %d requests; want the matrix after 2", m, err, n.Load()-n0)
	}
	if c.timeout != 300*time.Millisecond || c.retries != 0 {
		t.Errorf("the decision client changed: timeout %v retries %d", c.timeout, c.retries)
	}
}

// TestForHistorySharesAnswered: a refused connection after Prometheus
// has answered is a restart, asked again, whichever of the two clients
// had the answer. serve makes its history client at start, before its
// decisions' client (its startup rebuild) has had one; the flag was
// copied then, so the first history query that met a restart was taken
// for a wrong address and failed the run at once (tried again 15 min
// later). Here the decision client answers, Prometheus restarts (back
// after 1.5 s) and the history client's query is answered after its
// 1 s and 2 s waits.
func TestForHistorySharesAnswered(t *testing.T) {
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
	c, err := NewClient(ClientConfig{URL: "http://" + addr, Timeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	h := c.ForHistory(10*time.Second, 3) // made before any answer, as serve does
	at := time.Unix(1767607200, 0)
	if _, _, err := c.Range(context.Background(), "up", at, at, time.Minute); err != nil {
		t.Fatal(err)
	}
	srv.Close()
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
	m, _, err := h.Range(context.Background(), "up", at, at, time.Minute)
	if s := <-back; s != nil {
		defer s.Close()
	}
	if err != nil || len(m) != 1 {
		t.Errorf("history client after the decision client's answer and a restart: %v, %v; want the matrix, asked again", m, err)
	}
}
