//go:build unix

package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestClientFiles: the files prometheus:'s HTTP client reads are checked
// when the file is loaded. Before, --check-config said valid for each of
// these; a FIFO password_file blocked serve's first query, and its SIGTERM,
// for ever, a directory or a CA file that is no certificate failed every
// query or the start. Each is refused naming the key, the file and what
// to give; a missing file passes with a warning (a Secret not mounted where
// the check runs); Parse (text only, the chart's tests) does not open them.
func TestClientFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "password.fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	pw := filepath.Join(dir, "password")
	notPEM := filepath.Join(dir, "ca.crt")
	os.WriteFile(pw, []byte("secret"), 0o600)
	os.WriteFile(notPEM, []byte("not a certificate\n"), 0o644)
	const target = "targets:\n- {name: chat, selector: '{namespace=\"llm\"}', metrics: [{type: queue, target: 24}], maxReplicaCount: 8}\n"
	// The client's keys are decoded by its own YAML code: a problem is
	// placed at the block's first line (line 4, the first line under the
	// key of prometheus:), the full key named in the message.
	for _, tc := range []struct{ client, line, want string }{
		{"  basic_auth:\n    username: u\n    password_file: " + fifo + "\n",
			"c.yaml:4:", "prometheus.basic_auth.password_file: " + fifo + ": not a regular file (a named pipe); want a file (a Secret mounted as a volume is one)"},
		// Missing: the pod's Secret, not mounted where --check-config runs.
		{"  basic_auth:\n    username: u\n    password_file: " + filepath.Join(dir, "missing") + "\n", "", ""},
		{"  tls_config:\n    ca_file: " + filepath.Join(dir, "missing.crt") + "\n", "", ""},
		{"  authorization:\n    credentials_file: " + dir + "\n",
			"c.yaml:4:", "prometheus.authorization.credentials_file: " + dir + ": not a regular file (a directory); want a file (a Secret mounted as a volume is one)"},
		{"  tls_config:\n    ca_file: " + notPEM + "\n",
			"c.yaml:4:", "prometheus.tls_config: unable to use specified CA cert file " + notPEM},
		{"  basic_auth:\n    username: u\n    password_file: " + pw + "\n", "", ""},
	} {
		body := "prometheus:\n  url: http://127.0.0.1:9090\n" + tc.client + target
		path := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		var warnings []Error
		go func() {
			f, err := Load(path)
			if f != nil {
				warnings = f.Warnings
			}
			done <- err
		}()
		var err error
		select {
		case err = <-done:
		case <-time.After(5 * time.Second):
			t.Fatalf("Load of\n%s\nstill running after 5s", body)
		}
		var es Errors
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: err = %v, want valid", tc.client, err)
		case tc.want != "" && (!errors.As(err, &es) || !strings.Contains(err.Error(), tc.line) || !strings.HasSuffix(err.Error(), ": "+tc.want)):
			t.Errorf("err = %v\nwant %q COL: %q", err, tc.line, tc.want)
		}
		// A missing file is said: every query fails until it is there.
		if missing := strings.Contains(tc.client, "missing"); missing != (len(warnings) == 1) ||
			missing && !strings.Contains(warnings[0].Error(), "does not exist here: every query to Prometheus fails until it does") {
			t.Errorf("%s: warnings %v, want one saying the file does not exist: %v", tc.client, warnings, missing)
		}
		if tc.want != "" {
			if _, err := Parse([]byte(body), "c.yaml"); err != nil {
				t.Errorf("Parse (text only) of\n%s: %v, want valid", body, err)
			}
		}
	}
}
