package tcplisten

import (
	"errors"
	"net"
	"syscall"
	"testing"
)

// A port in use is one line naming the address once and what to do; the
// error still is EADDRINUSE for errors.Is.
func TestListenInUse(t *testing.T) {
	held, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	addr := held.Addr().String()
	_, err = Listen(addr, "--control "+addr, "--control")
	want := "--control " + addr + ": address already in use: another process holds the port (an infscale already running?); stop it, or give another with --control HOST:PORT (port 0: any free one)"
	if err == nil || err.Error() != want {
		t.Fatalf("got %v, want %q", err, want)
	}
	if !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("%v: not EADDRINUSE", err)
	}
	ln, err := Listen("127.0.0.1:0", "--listen 127.0.0.1:0", "--listen")
	if err != nil {
		t.Fatal(err)
	}
	ln.Close()
}
