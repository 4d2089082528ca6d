package promql

import (
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// serverClock is how far the server's clock is ahead of this machine's,
// from the Date header of its last answer (Go's and Prometheus's HTTP
// servers set it to the second): an instant query evaluated at this
// machine's now reads the server's future when this clock is ahead, and
// a rate's window then holds fewer samples, or none.
type serverClock struct {
	offset atomic.Int64 // nanoseconds
	known  atomic.Bool
	now    func() time.Time // this machine's clock (ClientConfig.Now)
}

// note records the Date header of an answer just received. The header is
// cut to the second and set when the server wrote it: the offset read
// is at most about a second (and the answer's one-way latency) below the
// true one. A cache's Age header is added to its Date.
func (c *serverClock) note(h http.Header) {
	if c == nil {
		return
	}
	now := c.now()
	d, err := http.ParseTime(h.Get("Date"))
	if err != nil {
		return
	}
	// A cache's answer keeps its origin's Date and says how old it is.
	if age, err := strconv.ParseInt(h.Get("Age"), 10, 64); err == nil && age > 0 && age < 1<<31 {
		d = d.Add(time.Duration(age) * time.Second)
	}
	c.offset.Store(int64(d.Sub(now.Round(0))))
	c.known.Store(true)
}

// ServerClock returns how far the server's clock is ahead of this
// machine's (negative: behind), from the Date header of its last answer
// to any of the clients sharing c's connection (ForHistory), within about
// a second; false before an answer with that header.
func (c *Client) ServerClock() (time.Duration, bool) {
	if c.clock == nil || !c.clock.known.Load() {
		return 0, false
	}
	return time.Duration(c.clock.offset.Load()), true
}
