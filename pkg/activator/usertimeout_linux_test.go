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
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestClientUserTimeout: a client connection accepted by Listen has a TCP
// user timeout of 30 s, the keep-alive's bound (15 s + 3 x 5 s): data the
// client leaves unacknowledged that long closes the connection, where
// keep-alive, which probes only a connection with nothing in flight, does
// not run. Before: none (0, the kernel's retransmissions: about 15 min).
func TestClientUserTimeout(t *testing.T) {
	raw, err := acceptedClient(t).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var ms int
	var gerr error
	if err := raw.Control(func(fd uintptr) { ms, gerr = unix.GetsockoptInt(int(fd), unix.IPPROTO_TCP, unix.TCP_USER_TIMEOUT) }); err != nil {
		t.Fatal(err)
	}
	if gerr != nil {
		t.Fatal(gerr)
	}
	if ms != 30000 {
		t.Errorf("TCP_USER_TIMEOUT of an accepted client connection %d ms, want 30000 (15 s + 3 x 5 s, the keep-alive's)", ms)
	}
}

// TestLostClientCancelsStream (Linux, in a network namespace of its own:
// needs user namespaces and ip(8)): three HTTP/1.1 clients read an event
// stream through the activator (200 B every 20 ms), its listener's user
// timeout 1 s, --body-timeout 1 min.
//   - lost: its node lost mid-stream (its address removed: the activator's
//     segments go out and are dropped, no FIN, reset or acknowledgement).
//     Its upstream request is cancelled 1 to 5 s later (the timeout, then
//     the next retransmission's check); before, the kernel retransmitted
//     for about 15 min and the upstream request ran all along (still open
//     after 10 s here).
//   - live: reads in bursts 700 ms apart (a slow reader whose small receive
//     window fills in each pause): never cut, 4 s on.
//   - stalled: alive but reads nothing, its window shut: cut 1 to 5 s on,
//     the user timeout's bound on a shut window (Linux 5.11 or later), not
//     --body-timeout's minute.
func TestLostClientCancelsStream(t *testing.T) {
	if os.Getenv("INFSCALE_TEST_NETNS") == "" {
		inNetns(t)
		return
	}
	ipCmd(t, "link", "set", "lo", "up")
	for _, a := range []string{"10.9.9.2", "10.9.9.3", "10.9.9.4"} {
		ipCmd(t, "addr", "add", a+"/32", "dev", "lo")
	}
	var mu sync.Mutex
	ended := map[string]time.Time{}
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/health" {
			return
		}
		w.Header().Set("Content-Type", "text/event-stream")
		event := "data: " + strings.Repeat("x", 192) + "\n\n"
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for r.Context().Err() == nil {
			if _, err := io.WriteString(w, event); err != nil {
				break
			}
			w.(http.Flusher).Flush()
			select {
			case <-tick.C:
			case <-r.Context().Done():
			}
		}
		mu.Lock()
		ended[r.URL.Path] = time.Now()
		mu.Unlock()
	}))
	defer up.Close()
	endedAt := func(path string) (time.Time, bool) {
		mu.Lock()
		defer mu.Unlock()
		at, ok := ended[path]
		return at, ok
	}
	u, _ := url.Parse(up.URL)
	a, err := New(Config{Upstream: u, ProbeInterval: 20 * time.Millisecond, BodyTimeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx)
	ln, err := listen("127.0.0.1:0", "--listen", "--listen", time.Second)
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: a}
	go srv.Serve(ln)
	defer srv.Close()
	waitFor(t, "ready", 5*time.Second, a.Ready)

	open := func(from, path string) *bufio.Reader {
		d := net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(from)}}
		c, err := d.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		_ = c.(*net.TCPConn).SetReadBuffer(4096)
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path)
		br := bufio.NewReaderSize(c, 1024)
		if l, err := br.ReadString('\n'); err != nil || l != "HTTP/1.1 200 OK\r\n" {
			t.Fatalf("%s: status line %q %v", path, l, err)
		}
		for i := 0; i < 3; i++ { // into the stream
			if _, err := br.ReadString('\n'); err != nil {
				t.Fatal(err)
			}
		}
		return br
	}
	open("10.9.9.2", "/lost")
	live := open("10.9.9.3", "/live")
	open("10.9.9.4", "/stalled") // reads no more
	liveErr := make(chan error, 1)
	go func() {
		buf := make([]byte, 64<<10)
		for {
			time.Sleep(700 * time.Millisecond)
			deadline := time.Now().Add(50 * time.Millisecond)
			for time.Now().Before(deadline) { // drain what came
				if _, err := live.Read(buf); err != nil {
					liveErr <- err
					return
				}
				if live.Buffered() == 0 {
					break
				}
			}
		}
	}()
	t0 := time.Now()
	// The lost node: its segments to it go out on lo and are dropped (the
	// address is no longer local and nothing forwards), its socket stays.
	ipCmd(t, "addr", "del", "10.9.9.2/32", "dev", "lo")
	ipCmd(t, "route", "add", "10.9.9.2/32", "dev", "lo")
	paths := []string{"/lost", "/stalled"}
	if !kernelAtLeast(5, 11) { // before 5.11 the user timeout does not count window probes
		paths = paths[:1]
	}
	for _, path := range paths {
		for time.Since(t0) < 10*time.Second {
			if _, ok := endedAt(path); ok {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		at, ok := endedAt(path)
		if !ok {
			t.Errorf("%s: the upstream request still open 10 s on, want cancelled within 5 s (the 1 s user timeout)", path)
			continue
		}
		took := at.Sub(t0)
		t.Logf("%s: upstream request cancelled %v on", path, took.Round(time.Millisecond))
		if path == "/lost" && (took < time.Second || took > 5*time.Second) {
			t.Errorf("%s: cancelled %v after the node was lost, want 1 to 5 s (the user timeout)", path, took)
		}
		if path == "/stalled" && took > 5*time.Second {
			t.Errorf("%s: cancelled %v on, want within 5 s", path, took)
		}
	}
	for time.Since(t0) < 4*time.Second {
		time.Sleep(100 * time.Millisecond)
	}
	select {
	case err := <-liveErr:
		t.Errorf("the live slow reader was cut: %v", err)
	default:
	}
	if at, ok := endedAt("/live"); ok {
		t.Errorf("the live slow reader's upstream request ended %v on, want it going on", at.Sub(t0))
	}
}

// inNetns runs the calling test again in a user and network namespace of
// its own (INFSCALE_TEST_NETNS set), skipping when they or ip(8) are not
// to be had.
func inNetns(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("ip"); err != nil {
		t.Skip("no ip(8):", err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "INFSCALE_TEST_NETNS=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:  syscall.CLONE_NEWUSER | syscall.CLONE_NEWNET,
		UidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getuid(), Size: 1}},
		GidMappings: []syscall.SysProcIDMap{{ContainerID: 0, HostID: os.Getgid(), Size: 1}},
	}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Skip("no user and network namespace:", err)
	}
	t.Logf("in a network namespace of its own:\n%s", out)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "--- SKIP") {
		t.Skip("skipped in the namespace")
	}
}

// ipCmd runs ip(8) with args, skipping the test when it is not allowed.
func ipCmd(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		t.Skipf("ip %s: %v %s", strings.Join(args, " "), err, out)
	}
}

// kernelAtLeast reports whether the running Linux kernel's release is
// major.minor or later (false when it cannot be read).
func kernelAtLeast(major, minor int) bool {
	var u unix.Utsname
	if unix.Uname(&u) != nil {
		return false
	}
	var ma, mi int
	if _, err := fmt.Sscanf(unix.ByteSliceToString(u.Release[:]), "%d.%d", &ma, &mi); err != nil {
		return false
	}
	return ma > major || ma == major && mi >= minor
}
