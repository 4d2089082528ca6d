// Package tcplisten binds the TCP addresses infscale's servers listen on
// (serve, fleet, activator) and words a failure the same way for each: the
// address, where it came from, and for a port in use what to do.
package tcplisten

import (
	"context"
	"errors"
	"fmt"
	"net"
	"syscall"
)

// Listen binds addr (host:port, TCP). from names where addr came from, as
// the user gave it ("--listen 127.0.0.1:8080", "listen :9105 (the config's
// listen:)"); flag is the flag that gives another address ("--listen").
//
// A port another process holds is one line: from, "address already in
// use", and what to do (stop the other process, or give another port with
// flag, port 0 taking any free one); net's own "listen tcp ADDR: bind:"
// prefix, which repeats the address, is left out. Any other failure is
// from followed by net's error.
func Listen(addr, from, flag string) (net.Listener, error) {
	return ListenConfig(net.ListenConfig{}, addr, from, flag)
}

// ListenConfig is Listen with lc's options (the accepted connections'
// TCP keep-alive: lc.KeepAliveConfig).
func ListenConfig(lc net.ListenConfig, addr, from, flag string) (net.Listener, error) {
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err == nil {
		return ln, nil
	}
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, &InUseError{From: from, Flag: flag, Err: err}
	}
	return nil, fmt.Errorf("%s: %w", from, err)
}

// InUseError is Listen's error for a port another process holds.
type InUseError struct {
	// From and Flag are Listen's arguments.
	From, Flag string
	// Err is net.Listen's error (it wraps syscall.EADDRINUSE).
	Err error
}

func (e *InUseError) Error() string {
	return e.From + ": address already in use: another process holds the port (an infscale already running?); stop it, or give another with " + e.Flag + " HOST:PORT (port 0: any free one)"
}

func (e *InUseError) Unwrap() error { return e.Err }
