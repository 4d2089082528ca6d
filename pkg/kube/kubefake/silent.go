package kubefake

import (
	"net"
	"sync"
	"testing"
)

// SilentServer is an API server that accepts TCP connections on loopback
// and never answers (a hung apiserver or a black-holing proxy). It returns
// the server's URL, http://127.0.0.1:PORT; the listener and the held
// connections close when t ends.
func SilentServer(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		conns []net.Conn
		done  = make(chan struct{})
	)
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		<-done
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	return "http://" + l.Addr().String()
}
