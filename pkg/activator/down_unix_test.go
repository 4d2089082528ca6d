//go:build unix

package activator

import (
	"fmt"
	"sync"
	"syscall"
	"testing"
)

// downAddr returns a loopback address that refuses every connection for
// the test's life, and a func that frees its port (for an upstream started
// on it later): a TCP socket bound to a free port and never listening,
// which the kernel answers with a reset and no other socket can bind. A
// port freed at once (net.Listen, then Close) could be taken by another
// package's test run in parallel and answer the activator's probe.
func downAddr(t *testing.T) (string, func()) {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM, 0)
	if err != nil {
		t.Fatal(err)
	}
	syscall.CloseOnExec(fd)
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd)
		t.Fatal(err)
	}
	sa, err := syscall.Getsockname(fd)
	if err != nil {
		syscall.Close(fd)
		t.Fatal(err)
	}
	var once sync.Once
	release := func() { once.Do(func() { syscall.Close(fd) }) }
	t.Cleanup(release)
	return fmt.Sprintf("127.0.0.1:%d", sa.(*syscall.SockaddrInet4).Port), release
}
