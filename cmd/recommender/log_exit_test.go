package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestLogJSONEndsInJSON: serve and the activator with --log-format json
// write every stderr line as a JSON record, the error they exit on and a
// start's warnings included (a log shipper parses each line), a flag kong
// refuses after --log-format json too; with the
// default text format the same run ends in the plain "infscale: " line.
func TestLogJSONEndsInJSON(t *testing.T) {
	dir := t.TempDir()
	// interval: the deprecated key (a warning); kv 150%: refused (exit 2).
	const page = "targets:\n- name: chat\n  server: vllm\n  scrape: [http://127.0.0.1:1/metrics]\n  metrics:\n  - {type: kv, target: %s}\n  minReplicaCount: 1\n  maxReplicaCount: 2\n"
	cfg, bad := filepath.Join(dir, "serve.yaml"), filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(cfg, []byte("interval: 15s\n"+fmt.Sprintf(page, "75%")), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bad, []byte(fmt.Sprintf(page, "150%")), 0o644); err != nil {
		t.Fatal(err)
	}
	noDir := filepath.Join(dir, "none", "audit.jsonl")
	for _, tc := range []struct {
		name string
		args []string
		want []string // substrings of the records' msg or error, in order
	}{
		{"serve config", []string{"serve", "--log-format", "json", "--config", bad}, []string{"1.5 (150%) must be in (0, 1]"}},
		// The start's warning in a reload's shape (msg, the problem in at).
		{"serve warning", []string{"serve", "--log-format", "json", "--config", cfg, "--audit-log", noDir}, []string{"deprecated configuration key at " + cfg + ":1:1: interval: deprecated key", "--audit-log"}},
		{"serve flag", []string{"serve", "--log-format", "json", "--listen", "127.0.0.1:99999", "--config", cfg}, []string{"--listen \"127.0.0.1:99999\""}},
		{"activator", []string{"activator", "--log-format", "json", "--upstream", "http://127.0.0.1:1", "--listen", "127.0.0.1:99999"}, []string{"--listen \"127.0.0.1:99999\""}},
		// kong's own errors, after --log-format json was read: a value
		// that is not a number, a flag serve does not have.
		{"serve flag value", []string{"serve", "--log-format", "json", "--config", cfg, "--audit-log-maxage", "x"}, []string{"--audit-log-maxage"}},
		{"activator unknown flag", []string{"activator", "--log-format=json", "--upstream", "http://127.0.0.1:1", "--no-such-flag"}, []string{"unknown flag --no-such-flag"}},
		// Before --log-format json: kong stops there and never reads it.
		{"serve unknown flag first", []string{"serve", "--no-such-flag", "--log-format", "json", "--config", cfg}, []string{"unknown flag --no-such-flag"}},
		{"activator bad value first", []string{"activator", "--upstream", "http://127.0.0.1:1", "--max-held", "x", "--log-format=json"}, []string{"--max-held"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			if code := run(context.Background(), tc.args, nil, &out, &errb); code != exitInvalid {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitInvalid, errb.String())
			}
			lines := strings.Split(strings.TrimSuffix(errb.String(), "\n"), "\n")
			var recs []map[string]any
			for _, l := range lines {
				var rec map[string]any
				if err := json.Unmarshal([]byte(l), &rec); err != nil {
					t.Fatalf("stderr line %q is not JSON: %v", l, err)
				}
				recs = append(recs, rec)
			}
			last := recs[len(recs)-1]
			if last["level"] != "ERROR" || last["msg"] != "exiting" || last["exit_code"] != float64(exitInvalid) {
				t.Errorf("last record %v: want level ERROR, msg exiting, exit_code %d", last, exitInvalid)
			}
			i := 0
			for _, rec := range recs {
				if i < len(tc.want) && strings.Contains(rec["msg"].(string)+" "+str(rec["error"])+"at "+str(rec["at"]), tc.want[i]) {
					i++
				}
			}
			if i < len(tc.want) {
				t.Errorf("records %v: %q not found in order", recs, tc.want[i])
			}
		})
	}
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"serve", "--config", cfg, "--audit-log", noDir}, nil, &out, &errb); code != exitInvalid ||
		!strings.HasPrefix(errb.String(), "infscale: warning: ") || !strings.Contains(errb.String(), "\ninfscale: --audit-log") {
		t.Errorf("text format: exit %d, stderr:\n%s", code, errb.String())
	}
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

// TestDemoLoggerFormat: the demo's logger (errors only, unless --log-level
// debug) writes in --log-format's format: with json an error is one JSON
// record, not slog's key=value text, and a warning is dropped.
func TestDemoLoggerFormat(t *testing.T) {
	for _, tc := range []struct {
		format string
		json   bool
	}{{"json", true}, {"text", false}} {
		var errb bytes.Buffer
		log := demoLogger(&env{stderr: &errb}, nil, LogFlags{LogLevel: "info", LogFormat: tc.format})
		log.Warn("dropped")
		log.Error("kept", "target", "chat")
		got := errb.String()
		var rec map[string]any
		isJSON := json.Unmarshal([]byte(got), &rec) == nil
		if strings.Contains(got, "dropped") || strings.Count(got, "\n") != 1 || isJSON != tc.json ||
			tc.json && (rec["msg"] != "kept" || rec["level"] != "ERROR" || rec["target"] != "chat") ||
			!tc.json && !strings.Contains(got, "level=ERROR msg=kept target=chat") {
			t.Errorf("--log-format %s: stderr %q; want one ERROR record kept (JSON: %v), the warning dropped", tc.format, got, tc.json)
		}
	}
}
