package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestFleetControl runs `infscale fleet` (one replica, no arrivals of its
// own), reads the control URL from the line it prints, and drives a drill
// over HTTP: a burst of 3 puts 3 requests on the one replica (each takes
// 1.77 s on the reference replica, so none has finished), cancel leaves
// none; --control=off binds no control API and prints no drill line.
func TestFleetControl(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	pr, pw := io.Pipe()
	var errb bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"fleet", "--max", "1", "--rate", "0", "--status", "0"}, nil, pw, &errb)
		pw.Close()
	}()
	var ctl string
	sc := bufio.NewScanner(pr)
	for ctl == "" && sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "# fault drills: curl -X POST '"); ok {
			ctl, _, _ = strings.Cut(rest, "/fleet/burst")
		}
	}
	go io.Copy(io.Discard, pr)
	if ctl == "" {
		t.Fatalf("no fault-drill line on stdout (stderr %q)", errb.String())
	}
	post := func(path string) map[string]any {
		t.Helper()
		resp, err := http.Post(ctl+path, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var s map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&s); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: %d, %v", path, resp.StatusCode, err)
		}
		return s
	}
	if s := post("/fleet/burst?n=3"); s["running"].(float64)+s["waiting"].(float64) != 3 || s["served"].(float64) != 0 {
		t.Errorf("after a burst of 3: %v, want 3 running or waiting, none served", s)
	}
	if s := post("/fleet/cancel"); s["running"].(float64)+s["waiting"].(float64)+s["pending"].(float64) != 0 {
		t.Errorf("after cancel: %v, want no request", s)
	}
	cancel()
	select {
	case code := <-done:
		if code != exitOK {
			t.Errorf("exit %d: %s", code, errb.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatal("fleet did not stop")
	}

	short, stop := context.WithTimeout(t.Context(), 300*time.Millisecond)
	defer stop()
	var out bytes.Buffer
	errb.Reset()
	if code := run(short, []string{"fleet", "--max", "1", "--status", "0", "--control=off"}, nil, &out, &errb); code != exitOK || strings.Contains(out.String(), "fault drills") {
		t.Errorf("--control=off: exit %d, stdout:\n%s\nwant 0 and no drill line (stderr %q)", code, out.String(), errb.String())
	}
}

// TestFleetControlIsListen: --control on --listen's own address failed
// binding it, saying another process held the port ("an infscale already
// running?"): it is this command's --listen. It is refused before
// binding, naming both flags; port 0 (any free port) twice is fine.
func TestFleetControlIsListen(t *testing.T) {
	for _, pair := range [][2]string{
		{"127.0.0.1:18439", "127.0.0.1:18439"},
		{":18439", "127.0.0.1:18439"},
		{"127.0.0.1:18439", "0.0.0.0:18439"},
	} {
		wantRefused(t, []string{"fleet", "--rate", "0", "--status", "0", "--listen", pair[0], "--control", pair[1]}, nil,
			"--control "+pair[1]+": the port of --listen "+pair[0])
	}
}

// TestFleetZeroNeverStarts: --replicas 0 without --follow never starts a
// replica (nothing else scales the fleet), so --rate's simulated traffic
// piled up pending without end (120,000 requests in 12 s at 10,000/s,
// memory growing): refused naming the flags. At --rate 0 (the OpenAI API
// answering 503, the activator's upstream) it runs until stopped.
func TestFleetZeroNeverStarts(t *testing.T) {
	for _, c := range []struct {
		rate string
		code int
	}{{"5", exitInvalid}, {"0", exitOK}} {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		var out, errb bytes.Buffer
		code := run(ctx, []string{"fleet", "--replicas", "0", "--rate", c.rate, "--status", "0", "--control", "off"}, nil, &out, &errb)
		cancel()
		if code != c.code || c.code == exitInvalid && !strings.Contains(errb.String(), "--replicas 0 without --follow: no replica ever starts") {
			t.Errorf("--rate %s: exit %d, want %d; stderr %q", c.rate, code, c.code, errb.String())
		}
	}
}
