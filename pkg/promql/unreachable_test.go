package promql

import (
	"net"
	"os"
	"syscall"
	"testing"
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
