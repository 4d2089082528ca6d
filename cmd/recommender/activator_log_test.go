package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/infscale/infscale/internal/buftest"
)

// TestActivatorLogJSON: with --log-format json every line the activator
// writes on stderr, from its start to its exit after SIGTERM, is one JSON
// object with time, level and msg: the start line (its settings as
// attributes named as their flags), the probe's, a refusal's and an
// upstream failure's warnings, the drain's and the end of the drain's.
// Before, the start, drain and end lines were plain text beside the
// probe's key=value lines, whatever a log pipeline expected.
func TestActivatorLogJSON(t *testing.T) {
	var ready atomic.Bool
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/health":
			if !ready.Load() {
				w.WriteHeader(http.StatusServiceUnavailable)
			}
		case "/fail": // no answer: the activator's 502
			if c, _, err := http.NewResponseController(w).Hijack(); err == nil {
				c.Close()
			}
		case "/ws": // a WebSocket, open until the activator closes it
			c, brw, err := http.NewResponseController(w).Hijack()
			if err != nil {
				return
			}
			defer c.Close()
			fmt.Fprint(brw, "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
			brw.Flush()
			io.Copy(io.Discard, brw)
		default:
			io.WriteString(w, "ok")
		}
	}))
	defer up.Close()
	listen, metrics := freePort(t), freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errb buftest.Buffer
	code := startActivator(t, ctx, listen, &errb, "--log-format", "json", "--listen", listen, "--metrics-listen", metrics, "--upstream", up.URL,
		"--probe-interval", "50ms", "--hold-timeout", "1s", "--max-held", "10", "--max-held-bytes", "2MiB")

	// Held for --hold-timeout, then refused: 503.
	if status, _ := fetchText(t, "http://"+listen+"/v1/models"); status != http.StatusServiceUnavailable {
		t.Errorf("a request held past --hold-timeout: %d, want 503", status)
	}
	ready.Store(true)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if status, _ := fetchText(t, "http://"+listen+"/v1/models"); status == http.StatusOK {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the upstream's answer never came through once it was ready")
		}
	}
	if status, _ := fetchText(t, "http://"+listen+"/fail"); status != http.StatusBadGateway {
		t.Errorf("an upstream that closes without answering: %d, want 502", status)
	}
	conn, err := net.Dial("tcp", listen)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(15 * time.Second))
	fmt.Fprint(conn, "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
	if resp, err := http.ReadResponse(bufio.NewReader(conn), nil); err != nil || resp.StatusCode != http.StatusSwitchingProtocols {
		t.Fatalf("upgrade: %v %v, want 101", resp, err)
	}

	cancel() // SIGTERM: the drain runs --hold-timeout 1s + 5s, the WebSocket closed in its last 2s
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("exit %d, want 0", c)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the activator did not exit")
	}

	var recs []map[string]any
	for i, line := range strings.Split(strings.TrimSuffix(errb.String(), "\n"), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Errorf("stderr line %d is not JSON (%v): %s", i+1, err, line)
			continue
		}
		for _, k := range []string{"time", "level", "msg"} {
			if _, ok := rec[k].(string); !ok {
				t.Errorf("stderr line %d has no %s: %s", i+1, k, line)
			}
		}
		recs = append(recs, rec)
	}
	if len(recs) == 0 {
		t.Fatal("nothing on stderr")
	}
	// find is the first record of level with msg starting so, having
	// every attribute of attrs (JSON's numbers are float64).
	find := func(level, msg string, attrs map[string]any) {
		t.Helper()
		for _, r := range recs {
			if r["level"] != level || !strings.HasPrefix(r["msg"].(string), msg) {
				continue
			}
			for k, v := range attrs {
				if r[k] != v {
					t.Errorf("%s %q: %s = %v, want %v", level, msg, k, r[k], v)
				}
			}
			return
		}
		t.Errorf("no %s record %q on stderr:\n%s", level, msg, errb.String())
	}
	if recs[0]["msg"] != "infscale activator on http://"+listen {
		t.Errorf("first record %v: want the start line, msg \"infscale activator on http://%s\"", recs[0], listen)
	}
	find("INFO", "infscale activator on http://"+listen, map[string]any{"listen": listen, "upstream": up.URL, "hold_timeout": "1s",
		"max_held": 10.0, "max_held_bytes": "2MiB", "metrics_listen": metrics})
	find("WARN", "upstream not ready", nil)
	find("WARN", "request refused", map[string]any{"status": 503.0})
	find("INFO", "upstream ready", nil)
	find("WARN", "upstream failed", map[string]any{"status": 502.0})
	find("INFO", "draining", map[string]any{"held": 0.0, "upgrades": 1.0, "drain_timeout": "6s"})
	find("INFO", "upgraded connections (WebSockets) still open at the end of the drain", map[string]any{"upgrades": 1.0, "closed": 1.0, "cut": 0.0})
}

// TestActivatorLogLevelWarn: --log-level warn keeps the warnings (the
// probe's: the upstream is down) and drops the info lines, the start and
// the drain's among them.
func TestActivatorLogLevelWarn(t *testing.T) {
	upstream, _ := downUpstream(t)
	listen := freePort(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var errb buftest.Buffer
	code := startActivator(t, ctx, listen, &errb, "--log-level", "warn", "--listen", listen, "--upstream", "http://"+upstream, "--probe-interval", "50ms", "--hold-timeout", "1s")
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(errb.String(), "upstream not ready"); time.Sleep(50 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no probe warning on stderr:\n%s", errb.String())
		}
	}
	cancel()
	select {
	case c := <-code:
		if c != 0 {
			t.Errorf("exit %d, want 0", c)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the activator did not exit")
	}
	for _, line := range strings.Split(strings.TrimSuffix(errb.String(), "\n"), "\n") {
		if !strings.Contains(line, " level=WARN msg=") {
			t.Errorf("with --log-level warn, a line not a warning: %s", line)
		}
	}
}
