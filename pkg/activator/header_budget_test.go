package activator

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"
)

// paddedRequest is a GET with n header fields of size bytes each.
func paddedRequest(n, size int) []byte {
	var b strings.Builder
	b.WriteString("GET /v1/models HTTP/1.1\r\nHost: x\r\n")
	for i := range n {
		fmt.Fprintf(&b, "X-Pad-%02d: %s\r\n", i, strings.Repeat("p", size))
	}
	b.WriteString("\r\n")
	return []byte(b.String())
}

// TestHeldHeadersCountInBudget: a held request's headers beyond 8 KiB
// count in --max-held-bytes while it is held. Before, only bodies did, and a request
// with no body but 1 MB of small header fields (8.6 MB of heap once
// parsed) held 1,000 times took gigabytes, far past the 22 KB per held
// request the memory check at start assumes: the activator was OOM-killed
// with every other client's held request.
func TestHeldHeadersCountInBudget(t *testing.T) {
	addr := down(t)
	u, _ := url.Parse("http://" + addr)
	a, base := start(t, Config{Upstream: u, ProbeInterval: 20 * time.Millisecond, MaxHeldBytes: 100_000})
	host := strings.TrimPrefix(base, "http://")
	// 20 fields of 3,000 bytes: at least 60,000 bytes of values, of which
	// at least 60,000 - 8,192 (the allowance a request's headers have in
	// the 22 KB) = 51,808 count; two do not fit in 100,000 bytes.
	first, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	first.Write(paddedRequest(20, 3000))
	waitFor(t, "the first request held", 5*time.Second, func() bool { return a.Held() == 1 })
	if got := a.HeldBytes(); got < 51_808 {
		t.Errorf("held bytes with one request of 60,000 bytes of header values held: %d; want at least 51,808", got)
	}
	second, err := net.Dial("tcp", host)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close()
	second.SetDeadline(time.Now().Add(5 * time.Second))
	second.Write(paddedRequest(20, 3000))
	resp, err := http.ReadResponse(bufio.NewReader(second), nil)
	if err != nil {
		t.Fatalf("second request: %v (held: %d); want 429", err, a.Held())
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
		t.Errorf("second request: %s (Retry-After %q); want 429 with Retry-After", resp.Status, resp.Header.Get("Retry-After"))
	}
	first.Close()
	waitFor(t, "the first request gone", 5*time.Second, func() bool { return a.Held() == 0 && a.HeldBytes() == 0 })
}
