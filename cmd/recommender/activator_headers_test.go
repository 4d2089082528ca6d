package main

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestActivatorHeaderBound: `infscale activator` refuses a request whose
// headers pass 64 KiB (activator.MaxHeaderBytes) with 431, and takes one
// of 60 KiB (Envoy's default bound). Before, net/http's default of 1 MiB
// held: such a header block of small fields takes 8.6 MB of heap once
// parsed, and a few hundred clients sending it at once took gigabytes
// (an activator with deploy/activator's 256 MiB limit OOM-killed).
func TestActivatorHeaderBound(t *testing.T) {
	listen := freePort(t)
	up := http.Server{Handler: http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go up.Serve(ln)
	defer up.Close()
	ctx, cancel := context.WithCancel(context.Background())
	code := make(chan int, 1)
	go func() {
		code <- run(ctx, []string{"activator", "--listen", listen, "--upstream", "http://" + ln.Addr().String(), "--probe-interval", "50ms"},
			strings.NewReader(""), io.Discard, io.Discard)
	}()
	defer func() { cancel(); <-code }()
	send := func(headerBytes int) int {
		t.Helper()
		var c net.Conn
		for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
			if c, err = net.Dial("tcp", listen); err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("activator did not listen: %v", err)
			}
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(10 * time.Second))
		req := "GET /v1/models HTTP/1.1\r\nHost: chat\r\n"
		for i := 0; len(req) < headerBytes; i++ {
			req += "X-Pad: " + strings.Repeat("p", 1000) + "\r\n"
		}
		go io.WriteString(c, req+"\r\n")
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			t.Fatalf("%d bytes of headers: %v", headerBytes, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := send(60 << 10); got != http.StatusOK {
		t.Errorf("60 KiB of headers: %d; want 200", got)
	}
	if got := send(80 << 10); got != http.StatusRequestHeaderFieldsTooLarge {
		t.Errorf("80 KiB of headers: %d; want 431", got)
	}
}
