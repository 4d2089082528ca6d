package activator

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// wsFrame is one WebSocket frame, unmasked.
type wsFrame struct {
	op      byte
	payload []byte
}

// readFrame reads one frame from r, unmasking its payload.
func readFrame(r io.Reader) (wsFrame, error) {
	var h [2]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		return wsFrame{}, err
	}
	n := uint64(h[1] & 0x7f)
	switch n {
	case 126:
		var b [2]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return wsFrame{}, err
		}
		n = uint64(binary.BigEndian.Uint16(b[:]))
	case 127:
		var b [8]byte
		if _, err := io.ReadFull(r, b[:]); err != nil {
			return wsFrame{}, err
		}
		n = binary.BigEndian.Uint64(b[:])
	}
	var key [4]byte
	masked := h[1]&0x80 != 0
	if masked {
		if _, err := io.ReadFull(r, key[:]); err != nil {
			return wsFrame{}, err
		}
	}
	p := make([]byte, n)
	if _, err := io.ReadFull(r, p); err != nil {
		return wsFrame{}, err
	}
	if masked {
		for i := range p {
			p[i] ^= key[i%4]
		}
	}
	return wsFrame{op: h[0] & 0x0f, payload: p}, nil
}

// frame is a FIN frame of opcode op, masked (a client's) or not.
func frame(op byte, payload []byte, masked bool) []byte {
	b := []byte{0x80 | op}
	switch n := len(payload); {
	case n < 126:
		b = append(b, byte(n))
	case n < 1<<16:
		b = append(b, 126)
		b = binary.BigEndian.AppendUint16(b, uint16(n))
	default:
		b = append(b, 127)
		b = binary.BigEndian.AppendUint64(b, uint64(n))
	}
	if !masked {
		return append(b, payload...)
	}
	b[1] |= 0x80
	key := [4]byte{1, 2, 3, 4}
	b = append(b, key[:]...)
	for i, c := range payload {
		b = append(b, c^key[i%4])
	}
	return b
}

// wsEcho is a WebSocket server of raw frames: it echoes text frames;
// "half" makes it send a 10-byte frame in two halves, pause (ms) apart;
// a close frame it answers with its own and hangs up. It records the
// close frames it got.
type wsEcho struct {
	pause  time.Duration
	mu     sync.Mutex
	closes [][]byte
}

func (e *wsEcho) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/health" {
		return
	}
	c, brw, err := http.NewResponseController(w).Hijack()
	if err != nil {
		return
	}
	defer c.Close()
	fmt.Fprint(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
	brw.Flush()
	for {
		f, err := readFrame(brw)
		if err != nil {
			return
		}
		switch {
		case f.op == 8:
			e.mu.Lock()
			e.closes = append(e.closes, f.payload)
			e.mu.Unlock()
			c.Write(frame(8, f.payload, false))
			return
		case string(f.payload) == "stall": // reads nothing more for a while
			time.Sleep(5 * time.Second)
			return
		case string(f.payload) == "half":
			b := frame(1, []byte("0123456789"), false)
			c.Write(b[:7])
			time.Sleep(e.pause)
			c.Write(b[7:])
		default:
			c.Write(frame(f.op, f.payload, false))
		}
	}
}

func (e *wsEcho) got() [][]byte {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([][]byte(nil), e.closes...)
}

// dialWS opens a WebSocket through the activator at base.
func dialWS(t *testing.T, base string) (net.Conn, *bufio.Reader) {
	t.Helper()
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	fmt.Fprint(c, "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
	br := bufio.NewReader(c)
	resp, err := http.ReadResponse(br, nil)
	if err != nil || resp.StatusCode != 101 {
		t.Fatalf("upgrade: %v %v, want 101", resp, err)
	}
	return c, br
}

// TestCloseUpgradesGoingAway: at the end of a drain, CloseUpgrades ends a
// WebSocket with a close frame, status 1001 (going away), to both sides,
// each at its stream's next frame boundary: the client's next frame is
// the close (after the rest of a frame the server was halfway through),
// the server gets one too, and once both answered with their own the
// connection ends, well before the grace. A server stalled mid-frame past
// the grace leaves the session to be cut (no close frame in the middle of
// a frame: the client would read it as the frame's payload).
func TestCloseUpgradesGoingAway(t *testing.T) {
	for _, c := range []struct {
		name       string
		half       bool
		pause      time.Duration
		wantClosed int
	}{
		{"at a frame boundary", false, 0, 1},
		{"mid-frame, its end within the grace", true, 300 * time.Millisecond, 1},
		{"mid-frame past the grace", true, 3 * time.Second, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			up := &wsEcho{pause: c.pause}
			addr, release := downAddr(t)
			comeUp(t, addr, release, up)
			a, base := start(t, Config{Upstream: &url.URL{Scheme: "http", Host: addr}, ProbeInterval: 20 * time.Millisecond})
			waitFor(t, "ready", 5*time.Second, a.Ready)
			conn, br := dialWS(t, base)
			conn.Write(frame(1, []byte("hi"), true))
			if f, err := readFrame(br); err != nil || string(f.payload) != "hi" {
				t.Fatalf("echo: %q %v", f.payload, err)
			}
			if c.half {
				conn.Write(frame(1, []byte("half"), true))
				time.Sleep(100 * time.Millisecond) // the first half through
			}
			type result struct{ closed, cut int }
			done := make(chan result, 1)
			t0 := time.Now()
			go func() {
				closed, cut := a.CloseUpgrades(time.Second)
				done <- result{closed, cut}
			}()
			if c.half && c.wantClosed == 1 {
				if f, err := readFrame(br); err != nil || string(f.payload) != "0123456789" {
					t.Fatalf("the frame the server was halfway through: %q %v, want it whole", f.payload, err)
				}
			}
			f, err := readFrame(br)
			if c.wantClosed == 0 {
				if err == nil && f.op == 8 {
					t.Errorf("a close frame inside a frame")
				}
			} else {
				if err != nil || f.op != 8 || len(f.payload) < 2 || binary.BigEndian.Uint16(f.payload) != 1001 {
					t.Fatalf("client's next frame: op %d %q %v, want a close frame with 1001", f.op, f.payload, err)
				}
				conn.Write(frame(8, f.payload, true)) // its answer
				if _, err := br.ReadByte(); err != io.EOF {
					t.Errorf("after the close frames: %v, want the connection closed (EOF)", err)
				}
			}
			r := <-done
			if r.closed != c.wantClosed || r.cut != 1-c.wantClosed {
				t.Errorf("CloseUpgrades: %d closed, %d cut; want %d, %d", r.closed, r.cut, c.wantClosed, 1-c.wantClosed)
			}
			if c.wantClosed == 1 {
				if took := time.Since(t0); took > 900*time.Millisecond {
					t.Errorf("CloseUpgrades took %v, want the answers' time, not the 1 s grace", took)
				}
				if got := up.got(); len(got) != 1 || binary.BigEndian.Uint16(got[0]) != 1001 {
					t.Errorf("the server's close frames %q, want one with 1001", got)
				}
			}
			if n := a.Upgrades(); n != 0 {
				t.Errorf("%d upgraded connections open after CloseUpgrades, want 0", n)
			}
		})
	}
}

// TestWSFrames: frame boundaries are found across reads split anywhere
// (a byte at a time), for 7-bit, 16-bit and 64-bit lengths, masked or
// not, and a feed with stop stops at the first.
func TestWSFrames(t *testing.T) {
	var stream []byte
	var ends []int
	for _, f := range []struct {
		n      int
		masked bool
	}{{0, false}, {5, true}, {125, false}, {126, true}, {300, false}, {70000, true}} {
		stream = append(stream, frame(2, make([]byte, f.n), f.masked)...)
		ends = append(ends, len(stream))
	}
	stream = append(stream, frame(8, []byte{3, 0xe9}, true)...)
	ends = append(ends, len(stream))
	// One byte at a time: at a boundary exactly at each frame's end.
	var fr wsFrames
	var got []int
	for i := range stream {
		fr.feed(stream[i:i+1], false)
		if fr.at() {
			got = append(got, i+1)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(ends) || fr.closes != 1 {
		t.Errorf("boundaries %v, closes %d; want %v, 1", got, fr.closes, ends)
	}
	// With stop, a feed of all of it stops at the first frame's end.
	var fs wsFrames
	if n := fs.feed(stream, true); n != 0 {
		t.Errorf("at the start, feed with stop took %d bytes, want 0 (a boundary)", n)
	}
	fs.feed(stream[:ends[0]+1], false)
	if n := fs.feed(stream[ends[0]+1:], true); ends[0]+1+n != ends[1] {
		t.Errorf("feed with stop took %d bytes, want %d: up to the second frame's end", n, ends[1]-ends[0]-1)
	}
}

// TestWebSocketPassesLargeFrames: frames pass whole and in order through
// the followed connection both ways: 1 MiB (a 64-bit length) and small
// ones after it.
func TestWebSocketPassesLargeFrames(t *testing.T) {
	addr, release := downAddr(t)
	comeUp(t, addr, release, &wsEcho{})
	a, base := start(t, Config{Upstream: &url.URL{Scheme: "http", Host: addr}, ProbeInterval: 20 * time.Millisecond})
	waitFor(t, "ready", 5*time.Second, a.Ready)
	conn, br := dialWS(t, base)
	big := make([]byte, 1<<20)
	for i := range big {
		big[i] = byte(i % 251)
	}
	go func() {
		conn.Write(frame(2, big, true))
		conn.Write(frame(1, []byte("after"), true))
	}()
	if f, err := readFrame(br); err != nil || string(f.payload) != string(big) {
		t.Fatalf("1 MiB frame: %d bytes %v, want it whole", len(f.payload), err)
	}
	if f, err := readFrame(br); err != nil || string(f.payload) != "after" {
		t.Fatalf("the frame after: %q %v", f.payload, err)
	}
}

// TestCloseUpgradesServerNotReading: a server that stops reading while
// the client sends megabytes leaves the activator's write to it blocked;
// CloseUpgrades still returns at its grace, the session counted cut
// (its close frame could not be sent at a frame boundary). A guard: the
// close to the server is tried beside the blocked write, not behind it.
func TestCloseUpgradesServerNotReading(t *testing.T) {
	addr, release := downAddr(t)
	comeUp(t, addr, release, &wsEcho{})
	a, base := start(t, Config{Upstream: &url.URL{Scheme: "http", Host: addr}, ProbeInterval: 20 * time.Millisecond})
	waitFor(t, "ready", 5*time.Second, a.Ready)
	conn, _ := dialWS(t, base)
	conn.Write(frame(1, []byte("stall"), true))
	go conn.Write(frame(2, make([]byte, 32<<20), true)) // more than the socket buffers take
	time.Sleep(300 * time.Millisecond)
	t0 := time.Now()
	closed, cut := a.CloseUpgrades(500 * time.Millisecond)
	if took := time.Since(t0); took > 1500*time.Millisecond {
		t.Errorf("CloseUpgrades took %v, want about its 500 ms grace", took)
	}
	if closed != 0 || cut != 1 {
		t.Errorf("CloseUpgrades: %d closed, %d cut; want 0, 1", closed, cut)
	}
}
