//go:build !unix

package activator

import (
	"net"
	"testing"
)

// downAddr is a loopback address nothing listens on (a port freed at
// once: without Unix sockets the port is not held) and a no-op release.
func downAddr(t *testing.T) (string, func()) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr, func() {}
}
