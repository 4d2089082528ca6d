package activator

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// smallBuffers sets a socket's SO_RCVBUF and SO_SNDBUF to 16 KiB (the
// kernel doubles them), which turns off loopback's autotuning (megabytes):
// how much of a body the upstream side takes before it blocks is then a
// few tens of KiB.
func smallBuffers(_, _ string, c syscall.RawConn) error {
	var serr error
	err := c.Control(func(fd uintptr) {
		for _, o := range []int{unix.SO_RCVBUF, unix.SO_SNDBUF} {
			if e := unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, o, 16<<10); e != nil {
				serr = e
			}
		}
	})
	return errors.Join(err, serr)
}

// TestStreamedBodyRestReadNotReset: a 300 KiB body streamed to a ready
// upstream that reads 10 bytes, waits until the activator's transport is
// blocked writing to it (small socket buffers on its side), and drops the
// connection (a reset). The activator answers 502 with most of the body
// (more than nothing, less than 256 KiB) still to be read from the client.
// It reads and discards that rest before it closes (within a second, as
// for a refusal): the client reads the 502 and then the connection's end.
// Before: the rest was given no time (a read deadline of now), net/http's
// own read of it failed at once, so it neither read it nor half-closed and
// waited, and the socket, closed with the client's bytes unread, was
// reset: the read after the 502 failed with "connection reset by peer",
// and a Go client still writing its body reported that write's error
// instead of the 502 (TestUpstreamFailsMidBody under -race: 2 of 300 runs,
// each in a run where the transport had read all but 256 KiB or less of
// its 2 MiB body). The same with Expect: 100-continue (the client sends
// its body once the transport's first read has the 100 Continue sent):
// its rest was given no time either.
func TestStreamedBodyRestReadNotReset(t *testing.T) {
	t.Run("Content-Length", func(t *testing.T) { streamedRestReadNotReset(t, false) })
	t.Run("Expect: 100-continue", func(t *testing.T) { streamedRestReadNotReset(t, true) })
}

func streamedRestReadNotReset(t *testing.T, expect bool) {
	const kib = 1 << 10
	up := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		_, _ = io.ReadFull(r.Body, make([]byte, 10))
		time.Sleep(300 * time.Millisecond) // the transport blocks writing meanwhile
		c, _, err := http.NewResponseController(w).Hijack()
		if err == nil {
			c.(*net.TCPConn).SetLinger(0)
			c.Close()
		}
	}))
	ln, err := (&net.ListenConfig{Control: smallBuffers}).Listen(context.Background(), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	up.Listener = ln
	up.Start()
	defer up.Close()
	u, _ := url.Parse(up.URL)
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = (&net.Dialer{Control: smallBuffers}).DialContext
	a, base := start(t, Config{Upstream: u, ProbeInterval: 20 * time.Millisecond, Transport: tr})
	waitFor(t, "ready", 5*time.Second, a.Ready)

	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	body := strings.Repeat("a", 300*kib)
	br := bufio.NewReader(c)
	if !expect {
		go fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	} else {
		fmt.Fprintf(c, "POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n", len(body))
		resp, err := http.ReadResponse(br, nil) // the 100 Continue, once the transport reads the body
		if err != nil || resp.StatusCode != http.StatusContinue {
			t.Fatalf("before the body: %v %v, want 100 Continue", resp, err)
		}
		go io.WriteString(c, body)
	}
	// A second 100 Continue may come first: the upstream's, which
	// ReverseProxy forwards, when net/http's own went out as the transport
	// began reading the body (a client parses any number: RFC 9110 15.2).
	resp, err := http.ReadResponse(br, nil)
	for err == nil && expect && resp.StatusCode == http.StatusContinue {
		resp, err = http.ReadResponse(br, nil)
	}
	if err != nil {
		t.Fatalf("the answer: %v, want a 502", err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadGateway || !resp.Close {
		t.Errorf("answer %d, Connection: close %v; want 502 and close", resp.StatusCode, resp.Close)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		t.Errorf("after the 502: %v, want the connection's end (EOF), not a reset", err)
	}
}
