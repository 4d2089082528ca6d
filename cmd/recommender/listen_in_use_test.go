package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// fleet and activator on a port another process holds exit 1 with serve's
// one line: the flag and address once, and what to do. fleet said
// "fleet: listen A: listen tcp A: bind: address already in use", activator
// "--listen A: listen tcp A: bind: ...", neither with a hint.
func TestFleetActivatorPortInUse(t *testing.T) {
	addr := heldPort(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	hint := ": address already in use: another process holds the port (an infscale already running?); stop it, or give another with "
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"fleet", "--listen", addr}, "infscale: --listen " + addr + hint + "--listen HOST:PORT (port 0: any free one)\n"},
		{[]string{"fleet", "--control", addr}, "infscale: --control " + addr + hint + "--control HOST:PORT (port 0: any free one)\n"},
		{[]string{"activator", "--listen", addr, "--upstream", "http://127.0.0.1:1"}, "infscale: --listen " + addr + hint + "--listen HOST:PORT (port 0: any free one)\n"},
	} {
		var out, errb bytes.Buffer
		code := run(ctx, tc.args, strings.NewReader(""), &out, &errb)
		if code != exitRuntime || errb.String() != tc.want || out.Len() != 0 {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 1 and %q", tc.args, code, out.String(), errb.String(), tc.want)
		}
		if ctx.Err() != nil {
			t.Fatalf("%v did not exit on the bind error", tc.args)
		}
	}
}
