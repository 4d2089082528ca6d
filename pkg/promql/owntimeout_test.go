package promql

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"
)

// TestOwnTimeoutToldByCause: whether the client's own timeout ended a
// query is told by its context's cause, not by the time since the query
// began. That time was taken after the deadline was set, so a wait that
// ended on time could measure a few microseconds short of the timeout,
// and the line said "context deadline exceeded" alone (backtest against a
// server that accepts and never answers, --query-timeout 2s: once in 5
// runs). A caller's shorter deadline is not the client's limit: said with
// its own cause (serve's period) or alone.
func TestOwnTimeoutToldByCause(t *testing.T) {
	c := &Client{timeout: 50 * time.Millisecond, timeoutName: "--query-timeout"}
	own, cancel, _ := c.context(context.Background())
	defer cancel()
	<-own.Done()

	short, cancelShort := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer cancelShort()
	byCaller, cancel2, _ := c.context(short)
	defer cancel2()
	<-byCaller.Done()

	period, cancelPeriod := context.WithTimeoutCause(context.Background(), 10*time.Millisecond, errors.New("the decision period ended"))
	defer cancelPeriod()
	byPeriod, cancel3, _ := c.context(period)
	defer cancel3()
	<-byPeriod.Done()

	for _, tc := range []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"own", own, "promql: timeout: no answer in 50ms, the limit per query (raise --query-timeout, or shorten the range or simplify the query): context deadline exceeded (query: up)"},
		{"caller", byCaller, "promql: timeout: context deadline exceeded (query: up)"},
		{"period", byPeriod, "promql: timeout: the decision period ended: context deadline exceeded (query: up)"},
	} {
		if got := c.queryError(tc.ctx, "up", tc.ctx.Err()).Error(); got != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, got, tc.want)
		}
	}
}

// TestHistoryTimeoutNamesItsOwnKnob: serve's client names
// prometheus.timeout, and serve's tuning asks its history through
// ForHistory with max(HistoryTimeout, that timeout): the knob is named
// only when it sets the history's limit, else "raise it" (raising
// prometheus.timeout from 1s to 30s leaves a 2m limit where it was).
func TestHistoryTimeoutNamesItsOwnKnob(t *testing.T) {
	c := &Client{timeout: time.Second, timeoutName: "prometheus.timeout"}
	for _, tc := range []struct {
		timeout time.Duration
		want    string
	}{
		{2 * time.Minute, "(raise it, "},
		{time.Second, "(raise prometheus.timeout, "},
	} {
		h := c.ForHistory(tc.timeout, 0)
		ctx, cancel := context.WithTimeoutCause(context.Background(), 0, errClientTimeout) // the client's own limit, passed
		defer cancel()
		<-ctx.Done()
		if got := h.queryError(ctx, "up", ctx.Err()).Error(); !strings.Contains(got, tc.want) {
			t.Errorf("ForHistory(%s): %s, want %q", tc.timeout, got, tc.want)
		}
	}
}
