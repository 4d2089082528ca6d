package config

import (
	"strings"
	"testing"
)

// TestCheckListenBarePort: a port alone ("8080", ":8080" is fine) is the
// commonest slip; the error shows the address to write with that port,
// where net's "missing port in address" read as if the port were absent.
func TestCheckListenBarePort(t *testing.T) {
	for _, tc := range []struct{ addr, want string }{
		{"8080", "8080 is a port alone: write 0.0.0.0:8080 (every interface) or 127.0.0.1:8080 (this machine only)"},
		{"9105", "write 0.0.0.0:9105"},
	} {
		err := CheckListen(tc.addr)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("CheckListen(%q) = %v, want it to contain %q", tc.addr, err, tc.want)
		}
	}
	for _, ok := range []string{":8080", "0.0.0.0:8080", "[::]:8080", "localhost:0"} {
		if err := CheckListen(ok); err != nil {
			t.Errorf("CheckListen(%q) = %v, want nil", ok, err)
		}
	}
	// Not a port: the generic message still names the form.
	if err := CheckListen("nope"); err == nil || !strings.Contains(err.Error(), "must be host:port") {
		t.Errorf(`CheckListen("nope") = %v, want "must be host:port"`, err)
	}
}
