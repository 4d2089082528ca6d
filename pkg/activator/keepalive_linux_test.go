package activator

import (
	"net"
	"syscall"
	"testing"
	"time"
)

// TestClientKeepAlive: a client connection accepted by Listen (the
// command's listener) has TCP keep-alive that finds a peer whose kernel
// answers nothing (a lost node, no FIN or reset: nothing else tells an
// HTTP/1.1 server whose client sends nothing) within 30 s of its last
// segment: the idle time before the first probe plus the probes' interval
// times their count. Before, Go's default: 15 s + 9 x 15 s = 150 s, the
// held request counted as demand that long.
func TestClientKeepAlive(t *testing.T) {
	ln, err := Listen("127.0.0.1:0", "--listen 127.0.0.1:0", "--listen")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	raw, err := s.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var on, idle, intvl, cnt int
	var errs [4]error
	if err := raw.Control(func(fd uintptr) {
		on, errs[0] = syscall.GetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_KEEPALIVE)
		idle, errs[1] = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_KEEPIDLE)
		intvl, errs[2] = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_KEEPINTVL)
		cnt, errs[3] = syscall.GetsockoptInt(int(fd), syscall.IPPROTO_TCP, syscall.TCP_KEEPCNT)
	}); err != nil {
		t.Fatal(err)
	}
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	dead := time.Duration(idle+intvl*cnt) * time.Second
	t.Logf("SO_KEEPALIVE %d, idle %d s, interval %d s, count %d: a dead peer known after %v", on, idle, intvl, cnt, dead)
	if on == 0 || dead > 30*time.Second {
		t.Errorf("a client whose node is lost is known after %v (keep-alive %d), want within 30 s", dead, on)
	}
	if idle < 10 {
		t.Errorf("keep-alive idle %d s: want 10 s or more (a live client's probes are cheap, not free)", idle)
	}
}
