package promql

import (
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestUnreachableSaysWhatToCheck: an address where nothing listens, or a
// host name that does not resolve, is said at once (Retryable), and the
// line said only Go's "connect: connection refused" (backtest, profile
// and tune end with it): it now says what to check, as a 404's and a
// 401's do. The errors are those net.Dial returns, built as it builds
// them.
func TestUnreachableSaysWhatToCheck(t *testing.T) {
	refused := &net.OpError{Op: "dial", Net: "tcp", Err: &os.SyscallError{Syscall: "connect", Err: syscall.ECONNREFUSED}}
	noHost := &net.OpError{Op: "dial", Net: "tcp", Err: &net.DNSError{Err: "no such host", Name: "prometheus", IsNotFound: true}}
	for _, c := range []struct {
		err  error
		want string
	}{
		{refused, "promql: unavailable: dial tcp: connect: connection refused (nothing listens there: is Prometheus up? check the URL's host and port) (query: up)"},
		{noHost, "promql: unavailable: dial tcp: lookup prometheus: no such host (the URL's host name does not resolve here: check the URL) (query: up)"},
	} {
		e := &QueryError{Reason: ReasonUnavailable, Query: "up", Err: c.err}
		if got := e.Error(); got != c.want {
			t.Errorf("%v:\n got %s\nwant %s", c.err, got, c.want)
		}
		if Retryable(e) {
			t.Errorf("%v: retried, want it said at once", c.err)
		}
	}
}

// TestTLSFailuresSayWhatToSet: real handshakes against an httptest TLS
// server (certificate for example.com and 127.0.0.1, signed by a CA the
// client is not given) and an https URL on a plain HTTP server. Each
// query's error said Go's words alone ("x509: certificate signed by
// unknown authority"); it now says what to set, reason unavailable
// (the connection's, not the query's) and not retried as a 5xx is.
func TestTLSFailuresSayWhatToSet(t *testing.T) {
	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler())
	defer tlsSrv.Close()
	tlsSrv.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes' failures, expected
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	for _, tc := range []struct{ name, url, want string }{
		{"unknown CA", tlsSrv.URL, "x509: certificate signed by unknown authority (the server's certificate is signed by a CA infscale does not trust: give that CA as the prometheus block's tls_config.ca_file)"},
		{"another host's", strings.Replace(tlsSrv.URL, "127.0.0.1", "localhost", 1), "not localhost (the server's certificate does not name the URL's host: use a host name it names, or set the prometheus block's tls_config.server_name to one)"},
		{"plain HTTP", strings.Replace(plain.URL, "http:", "https:", 1), "http: server gave HTTP response to HTTPS client (the server speaks plain HTTP: use an http:// URL)"},
	} {
		c, err := NewClient(ClientConfig{URL: tc.url, Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = c.Instant(context.Background(), "up", time.Now())
		if ReasonOf(err) != ReasonUnavailable || !strings.Contains(err.Error(), tc.want) || Retryable(err) {
			t.Errorf("%s: %v (retried %v), want unavailable saying %q, not retried", tc.name, err, Retryable(err), tc.want)
		}
	}
}
