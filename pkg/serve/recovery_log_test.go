package serve

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/promql"
)

// logLoop is a Loop on loopConfig with a fake source, its log in logb
// (text), and a clock at t0 + sec that at(sec) sets before one cycle. o's
// Source, Interval, Now and Log are set here (Metrics when nil).
type logLoop struct {
	l    *Loop
	src  *fakeSource
	logb *bytes.Buffer
	at   func(sec int)
}

func newLogLoop(t *testing.T, o LoopOptions, setup func(*Loop)) logLoop {
	t.Helper()
	cfg, err := config.Parse([]byte(loopConfig), "loop.yaml")
	if err != nil {
		t.Fatal(err)
	}
	ll := logLoop{src: &fakeSource{}, logb: &bytes.Buffer{}}
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	now := t0
	o.Source, o.Interval, o.Now, o.Log = ll.src, 15*time.Second, func() time.Time { return now }, slog.New(slog.NewTextHandler(ll.logb, nil))
	if o.Metrics == nil {
		o.Metrics = NewMetrics(prometheus.NewRegistry(), "test")
	}
	ll.l = newLoop(t, o)
	if setup != nil {
		setup(ll.l)
	}
	if err := ll.l.SetConfig(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	ll.at = func(sec int) {
		now = t0.Add(time.Duration(sec) * time.Second)
		ll.l.Cycle(t.Context())
	}
	return ll
}

// TestReadRecoveryLogged: Prometheus fails chat's running and waiting
// reads for three cycles 15 s apart (t=15, 30, 45) and answers again at
// t=60. The log has one failure line per signal (the second and third
// are rate-limited), then one "signal read again" line per signal with
// failed_for=45s (60 - 15) and failed_cycles=3; the other target, never
// failing, has none. Then the signals flap within the minute (fail at
// t=70, read at t=75): the failure is rate-limited (the last was logged at
// t=15, 55 s before), so neither it nor its end is logged again: at most
// one failure and one recovery line a minute. Before, the outage's end was
// in no log line at all.
func TestReadRecoveryLogged(t *testing.T) {
	ll := newLogLoop(t, LoopOptions{}, nil)
	ok := load(1, 50, 10)
	failed := Reading{Obs: unknownObservation(), Errors: []ReadError{
		{Signal: "running", Reason: "unavailable", Err: errors.New("server error: 500")},
		{Signal: "waiting", Reason: "unavailable", Err: errors.New("server error: 500")},
	}}
	ll.src.set("other", load(1, 5, 0))
	at := func(sec int, r Reading) {
		ll.src.set("chat", r)
		ll.at(sec)
	}
	logb := ll.logb
	at(0, ok)
	for _, s := range []int{15, 30, 45} {
		at(s, failed)
	}
	at(60, ok)
	log := logb.String()
	if n := strings.Count(log, `msg="signal read failed"`); n != 2 {
		t.Errorf("%d failure lines, want 2 (running, waiting):\n%s", n, log)
	}
	for _, sig := range []string{"running", "waiting"} {
		want := `msg="signal read again" target=chat signal=` + sig + ` failed_for=45s failed_cycles=3`
		if strings.Count(log, want) != 1 {
			t.Errorf("want one %q:\n%s", want, log)
		}
	}
	if n := strings.Count(log, `msg="signal read again"`); n != 2 {
		t.Errorf("%d recovery lines, want 2:\n%s", n, log)
	}
	logb.Reset()
	at(70, failed)
	at(75, ok)
	at(80, ok)
	if logb.Len() != 0 {
		t.Errorf("a flap within the minute logged:\n%s", logb.String())
	}
}

// TestReadFailuresOfManyTargetsOneLine: Prometheus fails every target's
// running and waiting reads (both targets of loopConfig) for three cycles
// 15 s apart, then answers again. One failure line per signal names the
// first target and targets=2 (was one per target and signal: 4, and 4
// lines a minute for as long as it lasts; 80 for 20 targets), and one
// recovery line per signal, targets=2, failed_for=45s, failed_cycles=3.
func TestReadFailuresOfManyTargetsOneLine(t *testing.T) {
	ll := newLogLoop(t, LoopOptions{}, nil)
	failed := Reading{Obs: unknownObservation(), Errors: []ReadError{
		{Signal: "running", Reason: "unavailable", Err: errors.New("server error: 500")},
		{Signal: "waiting", Reason: "unavailable", Err: errors.New("server error: 500")},
	}}
	at := func(sec int, chat, other Reading) {
		ll.src.set("chat", chat)
		ll.src.set("other", other)
		ll.at(sec)
	}
	logb := ll.logb
	at(0, load(1, 50, 10), load(1, 5, 0))
	for _, s := range []int{15, 30, 45} {
		at(s, failed, failed)
	}
	at(60, load(1, 50, 10), load(1, 5, 0))
	log := logb.String()
	for _, want := range []string{
		`msg="signal read failed" target=chat targets=2 signal=running reason=unavailable`,
		`msg="signal read failed" target=chat targets=2 signal=waiting reason=unavailable`,
		`msg="signal read again" target=chat targets=2 signal=running failed_for=45s failed_cycles=3`,
		`msg="signal read again" target=chat targets=2 signal=waiting failed_for=45s failed_cycles=3`,
	} {
		if strings.Count(log, want) != 1 {
			t.Errorf("want one %q", want)
		}
	}
	if n := strings.Count(log, `msg="signal read`); n != 4 {
		t.Errorf("%d read lines, want 4:\n%s", n, log)
	}
}

// TestTransportFailureOneLine: Prometheus's name does not resolve, so
// every query of both targets fails with the same *url.Error (running,
// waiting and ttft of chat, running and waiting of other; a query's own
// path differs: /api/v1/query, /api/v1/query_range) for three cycles 15 s
// apart, then it answers. One line says it: the three signals, targets=2,
// the cause once without the path; it was a line per signal, each with
// the same DNS error (seven for examples/serve-prometheus.yaml). The end
// is one line too, failed_for=45s failed_cycles=3. A 500 (the server
// answered) stays a line per signal (TestReadFailuresOfManyTargetsOneLine).
func TestTransportFailureOneLine(t *testing.T) {
	dns := &net.DNSError{Err: "no such host", Name: "prometheus.monitoring", IsNotFound: true}
	transportOutage(t, func(signal string) error {
		path := "/api/v1/query"
		if signal == "ttft" {
			path = "/api/v1/query_range"
		}
		return &url.Error{Op: "Post", URL: "http://prometheus.monitoring:9090" + path, Err: &net.OpError{Op: "dial", Net: "tcp", Err: dns}}
	}, "Post http://prometheus.monitoring:9090: dial tcp: lookup prometheus.monitoring: no such host (the URL's host name does not resolve here: check the URL)")
}

// TestTransportTLSOneLine: Prometheus behind TLS whose certificate is
// signed by a CA serve was not given. The one line says what to set: it
// said Go's "x509: certificate signed by unknown authority" alone, as did
// each query's error (pkg/promql's TestTLSFailuresSayWhatToSet, on a real
// handshake).
func TestTransportTLSOneLine(t *testing.T) {
	transportOutage(t, func(string) error {
		return &url.Error{Op: "Post", URL: "https://prometheus.monitoring:9090/api/v1/query",
			Err: &tls.CertificateVerificationError{Err: x509.UnknownAuthorityError{}}}
	}, "Post https://prometheus.monitoring:9090: tls: failed to verify certificate: x509: certificate signed by unknown authority (the server's certificate is signed by a CA infscale does not trust: give that CA as the prometheus block's tls_config.ca_file)")
}

// TestTransportResetOneLine: Prometheus resets every connection (a proxy
// in front of it restarting, say), so each query's error names its own
// connection, local port and all: "read tcp 10.1.0.7:<port>->
// 10.0.0.5:9090: read: connection reset by peer". The cause leaves the
// local address out, so three cycles 15 s apart (t=15, 30, 45), each
// query on a port of its own, are one line (the limiter's key the same
// each cycle: the second and third inside its minute) and one when the
// reads come back at t=60: 45 s, 3 cycles. With the port in the cause it
// was a line per signal each cycle, a new key every time.
func TestTransportResetOneLine(t *testing.T) {
	port := 41000
	transportOutage(t, func(string) error {
		port++
		return &url.Error{Op: "Post", URL: "http://prometheus.monitoring:9090/api/v1/query",
			Err: &net.OpError{Op: "read", Net: "tcp", Source: &net.TCPAddr{IP: net.IPv4(10, 1, 0, 7), Port: port}, Addr: &net.TCPAddr{IP: net.IPv4(10, 0, 0, 5), Port: 9090},
				Err: os.NewSyscallError("read", syscall.ECONNRESET)}}
	}, "Post http://prometheus.monitoring:9090: read tcp 10.0.0.5:9090: read: connection reset by peer")
}

// transportOutage runs a transport outage through a logLoop: chat's
// running, waiting and ttft reads and other's running and waiting fail
// with errOf(signal) (called afresh for every read) at t=15, 30 and 45,
// all read at 0 and 60. The log must have one failure line naming the
// three signals, targets=2 and cause, and one recovery line: 45 s, 3
// cycles.
func transportOutage(t *testing.T, errOf func(signal string) error, cause string) {
	t.Helper()
	ll := newLogLoop(t, LoopOptions{}, nil)
	failing := func(signals ...string) Reading {
		r := Reading{Obs: unknownObservation()}
		for _, sig := range signals {
			r.Errors = append(r.Errors, ReadError{Signal: sig, Reason: "unavailable", Err: &promql.QueryError{Reason: promql.ReasonUnavailable, Query: "up", Err: errOf(sig)}})
		}
		return r
	}
	at := func(sec int, c, o Reading) {
		ll.src.set("chat", c)
		ll.src.set("other", o)
		ll.at(sec)
	}
	at(0, load(1, 50, 10), load(1, 5, 0))
	for _, s := range []int{15, 30, 45} {
		at(s, failing("running", "waiting", "ttft"), failing("running", "waiting"))
	}
	at(60, load(1, 50, 10), load(1, 5, 0))
	log := ll.logb.String()
	for _, want := range []string{
		`msg="signal reads failed" target=chat targets=2 signals=running,waiting,ttft reason=unavailable err="` + cause + `" suppressed_since_last=0`,
		`msg="signal read again" target=chat targets=2 signals=running,waiting,ttft failed_for=45s failed_cycles=3`,
	} {
		if strings.Count(log, want) != 1 {
			t.Errorf("want one %q", want)
		}
	}
	if n := strings.Count(log, `msg="signal read`); n != 2 {
		t.Errorf("%d read lines, want 2:\n%s", n, log)
	}
}

// TestPagesOnHostsDownOwnLines: embedded mode, three replicas' hosts down
// each on its own (connection refused): chat's pages on 10.0.0.5 and
// 10.0.0.6, other's on 10.0.0.5 (the same host: one cause) and 10.0.0.7,
// two cycles 15 s apart. Each host is a line in the first cycle, 10.0.0.5
// one line for both targets (targets=2), and none in the second (within
// the minute): 3 lines. Before, the four errors (one signal, page, one
// reason) were one line naming 10.0.0.5 with targets=2, and chat's second
// page was limited away with its first: 10.0.0.6 and 10.0.0.7 in no line.
func TestPagesOnHostsDownOwnLines(t *testing.T) {
	ll := newLogLoop(t, LoopOptions{}, nil)
	refused := func(host string) ReadError {
		u := "http://" + host + ":8000/metrics"
		return ReadError{Signal: "page", Reason: "unavailable", Err: fmt.Errorf("%s: cannot fetch metrics page: %w", u, &url.Error{Op: "Get", URL: u,
			Err: &net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.ParseIP(host), Port: 8000}, Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}})}
	}
	chat := Reading{Obs: unknownObservation(), Errors: []ReadError{refused("10.0.0.5"), refused("10.0.0.6")}}
	other := Reading{Obs: unknownObservation(), Errors: []ReadError{refused("10.0.0.5"), refused("10.0.0.7")}}
	for _, sec := range []int{15, 30} {
		ll.src.set("chat", chat)
		ll.src.set("other", other)
		ll.at(sec)
	}
	log := ll.logb.String()
	for _, want := range []string{
		`msg="signal read failed" target=chat targets=2 signal=page reason=unavailable err="http://10.0.0.5:8000/metrics: cannot fetch metrics page: Get \"http://10.0.0.5:8000/metrics\": dial tcp 10.0.0.5:8000: connect: connection refused" suppressed_since_last=0`,
		`msg="signal read failed" target=chat signal=page reason=unavailable err="http://10.0.0.6:8000/metrics: cannot fetch metrics page: Get \"http://10.0.0.6:8000/metrics\": dial tcp 10.0.0.6:8000: connect: connection refused" suppressed_since_last=0`,
		`msg="signal read failed" target=other signal=page reason=unavailable err="http://10.0.0.7:8000/metrics: cannot fetch metrics page: Get \"http://10.0.0.7:8000/metrics\": dial tcp 10.0.0.7:8000: connect: connection refused" suppressed_since_last=0`,
	} {
		if strings.Count(log, want) != 1 {
			t.Errorf("want one %q", want)
		}
	}
	if n := strings.Count(log, `msg="signal read`); n != 3 {
		t.Errorf("%d read lines, want 3:\n%s", n, log)
	}
}

// switchWriter fails every write while full is set (a full disk), and
// takes them otherwise.
type switchWriter struct{ full bool }

func (w *switchWriter) Write(p []byte) (int, error) {
	if w.full {
		return 0, errors.New("no space left on device")
	}
	return len(p), nil
}

// TestWriteFailuresOfManyTargetsOneLine: the audit log's disk is full for
// three cycles 15 s apart (t=15, 30, 45) while both targets decide: 6
// lines fail, counted per target (3 each), said in one line naming chat
// and targets=2 (the second and third cycles inside its minute; it was
// one line per target, and a full disk under 20 targets 20 lines a
// minute), and at t=60, the first cycle whose writes all succeed, once:
// "audit log written again" failed_for=45s failed_cycles=3. The same for
// a state dir made unwritable and writable again.
func TestWriteFailuresOfManyTargetsOneLine(t *testing.T) {
	dir := t.TempDir()
	store, err := NewStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	m := NewMetrics(prometheus.NewRegistry(), "test")
	aw := &switchWriter{}
	ll := newLogLoop(t, LoopOptions{Metrics: m, Store: store}, func(l *Loop) { l.audit = aw })
	ll.src.set("chat", load(1, 50, 10))
	ll.src.set("other", load(1, 5, 0))
	at, logb := ll.at, ll.logb
	at(0)
	aw.full = true
	for _, s := range []int{15, 30, 45} {
		at(s)
	}
	aw.full = false
	at(60)
	log := logb.String()
	for _, want := range []string{
		`msg="audit log write failed" target=chat targets=2 reason=audit_write err="no space left on device" suppressed_since_last=0`,
		`msg="audit log written again" reason=audit_write failed_for=45s failed_cycles=3`,
	} {
		if strings.Count(log, want) != 1 {
			t.Errorf("want one %q:\n%s", want, log)
		}
	}
	if n := strings.Count(log, "audit log write"); n != 1 {
		t.Errorf("%d audit failure lines, want 1:\n%s", n, log)
	}
	for _, target := range []string{"chat", "other"} {
		if got := queryErrors(m, target, "audit_write"); got != 3 {
			t.Errorf("%s: audit_write count %v, want 3", target, got)
		}
	}

	// The state dir: a file where it was (every save fails), then back.
	logb.Reset()
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	at(75)
	at(90)
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	at(105)
	log = logb.String()
	if n := strings.Count(log, `msg="state write failed" target=chat targets=2 reason=state_write`); n != 1 || strings.Count(log, "state write failed") != 1 {
		t.Errorf("want one state write failed line for both targets:\n%s", log)
	}
	if want := `msg="state written again" reason=state_write failed_for=30s failed_cycles=2`; strings.Count(log, want) != 1 {
		t.Errorf("want one %q:\n%s", want, log)
	}
}

// TestWarningsOfManyTargetsOneLine: both targets are read with the same
// kind of warning for five cycles 15 s apart (t=0..60): one line for both
// at t=0 (target=chat targets=2, chat's warnings) and one at t=60 with the
// 3 between suppressed: 2 lines, where each target had its own (4).
func TestWarningsOfManyTargetsOneLine(t *testing.T) {
	ll := newLogLoop(t, LoopOptions{}, nil)
	chat, other := load(1, 50, 10), load(1, 5, 0)
	chat.Warnings, other.Warnings = []string{"http://a/metrics: no running or waiting sample"}, []string{"http://b/metrics: no running or waiting sample"}
	ll.src.set("chat", chat)
	ll.src.set("other", other)
	for s := 0; s <= 60; s += 15 {
		ll.at(s)
	}
	logb := ll.logb
	log := logb.String()
	first := `msg="pages read with warnings" target=chat targets=2 warnings="[http://a/metrics: no running or waiting sample]" suppressed_since_last=0`
	second := `msg="pages read with warnings" target=chat targets=2 warnings="[http://a/metrics: no running or waiting sample]" suppressed_since_last=3`
	if strings.Count(log, first) != 1 || strings.Count(log, second) != 1 || strings.Count(log, "pages read with warnings") != 2 {
		t.Errorf("want the two lines\n%s\n%s\nlog:\n%s", first, second, log)
	}
}
