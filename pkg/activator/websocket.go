package activator

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/infscale/infscale/internal/crashlog"
)

// UpgradeCloseGrace is how long CloseUpgrades gives the WebSockets still
// open at the end of a drain to close: each side is sent a close frame
// (1001 going away) at its stream's next frame boundary, and has the rest
// of it to answer with its own.
const UpgradeCloseGrace = 2 * time.Second

// goingAwayReason is the reason in the close frames CloseUpgrades sends.
const goingAwayReason = "infscale activator shutting down"

// errGoingAway ends a WebSocket's copy once both sides were sent a close
// frame (and answered it, or the grace passed); errWSCut one whose stream
// was not at a frame boundary within the grace.
var (
	errGoingAway = errors.New("websocket closed: going away")
	errWSCut     = errors.New("websocket cut: no frame boundary within the grace")
)

// isWebSocket reports whether h (a 101's) switches to WebSocket.
func isWebSocket(h http.Header) bool {
	return strings.EqualFold(strings.TrimSpace(h.Get("Upgrade")), "websocket")
}

// closeFrame is a close frame with status 1001 (going away, RFC 6455
// 7.4.1) and goingAwayReason: masked (with a random key) when it goes to
// the server, as a client's frames must be (RFC 6455 5.3).
func closeFrame(masked bool) []byte {
	payload := binary.BigEndian.AppendUint16(nil, 1001)
	payload = append(payload, goingAwayReason...)
	b := []byte{0x88, byte(len(payload))} // FIN, opcode 8 (close); under 126 bytes
	if !masked {
		return append(b, payload...)
	}
	b[1] |= 0x80
	var key [4]byte
	_, _ = rand.Read(key[:])
	b = append(b, key[:]...)
	for i, c := range payload {
		b = append(b, c^key[i%4])
	}
	return b
}

// wsFrames follows one direction of a WebSocket frame by frame (RFC 6455
// 5.2), to know where a frame ends: a close frame may be sent there, also
// between the fragments of a message (5.4), never inside a frame.
type wsFrames struct {
	hdr    [14]byte
	nh     int    // header bytes read of the current frame (0: none, or all)
	left   uint64 // payload bytes left of the current frame
	op     byte   // the current frame's opcode
	closes int    // close frames passed whole
}

// at reports whether the stream is at a frame boundary.
func (f *wsFrames) at() bool { return f.nh == 0 && f.left == 0 }

// feed follows p, all of it, or with stop only up to the first frame
// boundary (0 bytes when at one already), and returns the bytes followed.
func (f *wsFrames) feed(p []byte, stop bool) int {
	n := 0
	for n < len(p) {
		if stop && f.at() {
			return n
		}
		if f.left > 0 {
			k := min(uint64(len(p)-n), f.left)
			n += int(k)
			f.left -= k
			if f.left == 0 && f.op == 8 {
				f.closes++
			}
			continue
		}
		f.hdr[f.nh] = p[n]
		f.nh++
		n++
		if f.nh < 2 {
			continue
		}
		need := 2
		switch f.hdr[1] & 0x7f {
		case 126:
			need += 2
		case 127:
			need += 8
		}
		if f.hdr[1]&0x80 != 0 {
			need += 4 // the masking key
		}
		if f.nh < need {
			continue
		}
		f.op = f.hdr[0] & 0x0f
		switch l := f.hdr[1] & 0x7f; l {
		case 126:
			f.left = uint64(binary.BigEndian.Uint16(f.hdr[2:4]))
		case 127:
			f.left = binary.BigEndian.Uint64(f.hdr[2:10])
		default:
			f.left = uint64(l)
		}
		f.nh = 0
		if f.left == 0 && f.op == 8 {
			f.closes++
		}
	}
	return n
}

// wsConn is the upstream end of a proxied WebSocket, as ReverseProxy
// uses it: what Read returns goes to the client, what the client sends is
// written with Write. It follows both directions' frames so that
// goingAway can close the session cleanly, with a close frame 1001 to
// each side at its next frame boundary, where the exit would cut it.
type wsConn struct {
	up     io.ReadWriteCloser
	a      *Activator
	in     chan []byte // the pump's reads from up
	pumped error       // the pump's last error, set before in is closed
	closed chan struct{}
	once   sync.Once

	going    chan struct{} // closed by goingAway
	goOnce   sync.Once
	deadline time.Time // set before going is closed

	// Read's own (ReverseProxy reads from one goroutine).
	down     wsFrames    // server -> client
	pending  []byte      // read from the server, not yet followed
	out      []byte      // followed, to return to the client
	toClient bool        // the close frame is in out or sent
	timer    *time.Timer // to the deadline, once going

	mu       sync.Mutex // Write's, and goingAway's close to the server
	upFrames wsFrames   // client -> server
	// toServer: the close frame was written to the server; clientClosed:
	// the client sent a close frame (read without c.mu, which a Write
	// blocked on the server holds).
	toServer, clientClosed atomic.Bool
	echoed                 chan struct{}

	clean, cut atomic.Bool // the outcome of goingAway
}

// newWSConn follows the WebSocket on up, until it is closed or ctx (its
// request's) ends.
func (a *Activator) newWSConn(ctx context.Context, up io.ReadWriteCloser) *wsConn {
	c := &wsConn{up: up, a: a, in: make(chan []byte), closed: make(chan struct{}), going: make(chan struct{}), echoed: make(chan struct{}, 1)}
	a.wsMu.Lock()
	a.ws[c] = struct{}{}
	a.wsMu.Unlock()
	go func() {
		defer crashlog.Handle(a.cfg.Log) // a frame parser's panic ends the process: one record
		c.pump()
	}()
	go func() {
		select {
		case <-ctx.Done():
			c.Close()
		case <-c.closed:
		}
	}()
	return c
}

// pump reads up and hands each read to Read, until up fails or c closes.
func (c *wsConn) pump() {
	defer close(c.in)
	// Small: it is held while the WebSocket is idle (most of its life);
	// ReverseProxy copies each read on with a buffer of its own.
	b := make([]byte, 4<<10)
	for {
		n, err := c.up.Read(b)
		if n > 0 {
			select {
			case c.in <- append([]byte(nil), b[:n]...):
			case <-c.closed:
				return
			}
		}
		if err != nil {
			c.pumped = err
			return
		}
	}
}

func (c *wsConn) isGoing() bool {
	select {
	case <-c.going:
		return true
	default:
		return false
	}
}

func (c *wsConn) Read(p []byte) (int, error) {
	for {
		if len(c.out) > 0 {
			n := copy(p, c.out)
			c.out = c.out[n:]
			return n, nil
		}
		if c.toClient {
			return 0, c.wait()
		}
		going := c.isGoing()
		if len(c.pending) > 0 {
			// All of it, or going away only up to the frame's end.
			n := c.down.feed(c.pending, going)
			c.out, c.pending = c.pending[:n], c.pending[n:]
			if n > 0 {
				continue
			}
		}
		if going && c.down.at() {
			// The server's bytes after this boundary (pending) are not
			// the client's: wait follows them. A server that sent its
			// own close frame already is closing the session itself.
			if c.down.closes == 0 {
				c.out = closeFrame(false)
			}
			c.toClient = true
			continue
		}
		var timeout <-chan time.Time
		wake := c.going
		if going {
			if c.timer == nil {
				c.timer = time.NewTimer(time.Until(c.deadline))
			}
			timeout, wake = c.timer.C, nil
		}
		select {
		case b, ok := <-c.in:
			if !ok {
				if c.pumped == nil || c.pumped == io.EOF {
					return 0, io.EOF
				}
				return 0, c.pumped
			}
			c.pending = b
		case <-wake:
		case <-timeout:
			c.cut.Store(true)
			return 0, errWSCut
		}
	}
}

// wait waits, once the client was sent its close frame, for both sides'
// own close frames (the server's, or its end) or the deadline, and ends
// the copy: the server's bytes meanwhile are followed, not passed on.
func (c *wsConn) wait() error {
	if c.timer == nil {
		c.timer = time.NewTimer(time.Until(c.deadline))
	}
	t := c.timer
	c.down.feed(c.pending, false)
	c.pending = nil
	serverDone := c.down.closes > 0
	in := c.in
	for {
		if !c.toServer.Load() {
			select { // the client is mid-frame: its end sends the server's close
			case <-c.echoed:
				continue
			case <-c.closed: // the client left
				return io.EOF
			case <-t.C:
				c.cut.Store(true)
				return errWSCut
			}
		}
		if c.clientClosed.Load() && serverDone {
			c.clean.Store(true)
			return errGoingAway
		}
		select {
		case b, ok := <-in:
			if !ok {
				serverDone, in = true, nil
				continue
			}
			c.down.feed(b, false)
			serverDone = c.down.closes > 0
		case <-c.echoed:
		case <-t.C:
			c.clean.Store(true) // both were sent their close frame
			return errGoingAway
		}
	}
}

func (c *wsConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	defer func() { c.clientClosed.Store(c.upFrames.closes > 0) }()
	if c.toServer.Load() {
		// The server was sent its close frame: the client's bytes after
		// it are followed (its own close frame), not passed on.
		c.upFrames.feed(p, false)
		c.kick()
		return len(p), nil
	}
	if !c.isGoing() {
		n, err := c.up.Write(p)
		c.upFrames.feed(p[:n], false)
		return n, err
	}
	k := c.upFrames.feed(p, true)
	if _, err := c.up.Write(p[:k]); err != nil {
		return 0, err
	}
	if c.upFrames.at() {
		c.closeServerLocked()
		c.upFrames.feed(p[k:], false)
		c.kick()
	}
	return len(p), nil
}

// closeServerLocked writes the close frame to the server (c.mu held),
// unless the client sent its own already.
func (c *wsConn) closeServerLocked() {
	c.toServer.Store(true)
	if c.upFrames.closes == 0 {
		_, _ = c.up.Write(closeFrame(true))
	}
}

func (c *wsConn) kick() {
	select {
	case c.echoed <- struct{}{}:
	default:
	}
}

// goingAway starts the close: each side gets its close frame at its
// stream's next frame boundary, by deadline.
func (c *wsConn) goingAway(deadline time.Time) {
	c.goOnce.Do(func() {
		c.deadline = deadline
		close(c.going)
		// Not waited for: a Write blocked on a server that does not read
		// holds c.mu (the session is then cut at the deadline).
		go func() {
			defer crashlog.Handle(c.a.cfg.Log)
			c.mu.Lock()
			defer c.mu.Unlock()
			if !c.toServer.Load() && c.upFrames.at() {
				c.closeServerLocked()
				c.kick()
			}
		}()
	})
}

func (c *wsConn) Close() error {
	var err error
	c.once.Do(func() {
		close(c.closed)
		err = c.up.Close()
		c.a.wsMu.Lock()
		delete(c.a.ws, c)
		c.a.wsMu.Unlock()
	})
	return err
}

// CloseUpgrades closes the upgraded connections still open (the end of a
// drain): each WebSocket gets a close frame with status 1001 (going away)
// to both sides, each at its stream's next frame boundary, and grace for
// their answers; a WebSocket not at a frame boundary within grace, and an
// upgraded connection of another protocol, is left to be cut. It returns
// how many were closed so and how many are cut (a session that ended
// otherwise meanwhile is neither).
func (a *Activator) CloseUpgrades(grace time.Duration) (closed, cut int) {
	deadline := time.Now().Add(grace)
	a.wsMu.Lock()
	conns := make([]*wsConn, 0, len(a.ws))
	for c := range a.ws {
		conns = append(conns, c)
	}
	a.wsMu.Unlock()
	for _, c := range conns {
		c.goingAway(deadline)
	}
	// A little past the deadline: each copy ends at it.
	ctx, cancel := context.WithDeadline(context.Background(), deadline.Add(100*time.Millisecond))
	defer cancel()
	cut = a.WaitUpgrades(ctx)
	for _, c := range conns {
		if c.clean.Load() {
			closed++
		} else if c.cut.Load() {
			cut++
		}
	}
	return closed, cut
}
