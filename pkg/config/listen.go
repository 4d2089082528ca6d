package config

import (
	"fmt"
	"net"
	"strconv"
)

// CheckListen checks an HTTP listen address (the config's listen, serve's
// --listen): host:port with a port 0..65535 (0: any free port, for tests
// and the demo). The error says what is wrong and shows an example.
func CheckListen(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if n, perr := strconv.Atoi(addr); err != nil && perr == nil && n >= 0 && n <= 65535 {
		// A port alone: net's "missing port in address" reads as if the port were absent.
		return fmt.Errorf("%d is a port alone: write 0.0.0.0:%d (every interface) or 127.0.0.1:%d (this machine only)", n, n, n)
	}
	if err != nil {
		return fmt.Errorf("must be host:port (e.g. 0.0.0.0:9105): %v", err)
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		// 99999 or "" would fail only at startup, after --check-config said valid.
		return fmt.Errorf("port %q: allowed a port number 0..65535 (0: any free port), e.g. 0.0.0.0:9105", port)
	}
	return nil
}
