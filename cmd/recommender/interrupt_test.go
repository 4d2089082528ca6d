package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"
)

// A command a signal cancels (main's NotifyContext; here the context)
// exits 130 with one line, whatever error the cancellation caused inside.
func TestInterruptedExits130(t *testing.T) {
	for _, args := range [][]string{
		{"tune", "--trace", "synthetic:poisson,rate=5,duration=6h"},
		{"simulate", "--trace", "synthetic:poisson,rate=5,duration=6h"},
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		var out, errb bytes.Buffer
		code := run(ctx, args, strings.NewReader(""), &out, &errb)
		cancel()
		if code != exitInterrupted || errb.String() != "infscale: interrupted\n" {
			t.Errorf("%v: exit %d, stderr %q; want 130 and \"infscale: interrupted\"", args, code, errb.String())
		}
	}
}
