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
		// A missing file is said (what it does: TestMissingClientFileWarning).
		if missing := strings.Contains(tc.client, "missing"); missing != (len(warnings) == 1) ||
			missing && !strings.Contains(warnings[0].Error(), "does not exist here: ") {
			t.Errorf("%s: warnings %v, want one saying the file does not exist: %v", tc.client, warnings, missing)
		}
		if tc.want != "" {
			if _, err := Parse([]byte(body), "c.yaml"); err != nil {
				t.Errorf("Parse (text only) of\n%s: %v, want valid", body, err)
			}
		}
	}
}

// TestMissingClientFileWarning: a missing file's warning says what it
// does, checked against the client serve makes from the same block
// (Prometheus.RoundTripper, NewPrometheusSource's): a credential file
// (password_file, oauth2's client_secret_file and its own tls_config) is
// read at each request, so the client is made and every query fails; the
// CA, certificate and key of tls_config are loaded when the client is
// made, so serve stops at start ("prometheus http client: unable to read
// CA cert"), where the warning said every query fails.
func TestMissingClientFileWarning(t *testing.T) {
	dir := t.TempDir()
	gone := func(name string) string { return filepath.Join(dir, name) }
	const target = "targets:\n- {name: chat, selector: '{namespace=\"llm\"}', metrics: [{type: queue, target: 24}], maxReplicaCount: 8}\n"
	const perQuery = " does not exist here: every query to Prometheus fails until it does (a Secret not mounted, or a typo in the path)"
	const atStart = " does not exist here: serve stops at start until it does (Prometheus's client loads the TLS files when it is made; a Secret not mounted, or a typo in the path)"
	for _, tc := range []struct {
		client   string
		warnings []string
		clientOK bool // RoundTripper makes the client
	}{
		{"  basic_auth: {username: u, password_file: " + gone("pw") + "}\n",
			[]string{"prometheus.basic_auth.password_file: " + gone("pw") + perQuery}, true},
		{"  oauth2: {client_id: x, client_secret_file: " + gone("secret") + ", token_url: 'http://127.0.0.1:1/t', tls_config: {ca_file: " + gone("o.crt") + "}}\n",
			[]string{"prometheus.oauth2.client_secret_file: " + gone("secret") + perQuery, "prometheus.oauth2.tls_config.ca_file: " + gone("o.crt") + perQuery}, true},
		// prometheus/common moves bearer_token_file to
		// authorization.credentials_file: named as written, or as
		// authorization when written so.
		{"  bearer_token_file: " + gone("token") + "\n",
			[]string{"prometheus.bearer_token_file: " + gone("token") + perQuery}, true},
		{"  authorization: {credentials_file: " + gone("cred") + "}\n",
			[]string{"prometheus.authorization.credentials_file: " + gone("cred") + perQuery}, true},
		{"  tls_config: {ca_file: " + gone("ca.crt") + "}\n",
			[]string{"prometheus.tls_config.ca_file: " + gone("ca.crt") + atStart}, false},
		{"  tls_config: {cert_file: " + gone("c.crt") + ", key_file: " + gone("c.key") + "}\n",
			[]string{"prometheus.tls_config.cert_file: " + gone("c.crt") + atStart, "prometheus.tls_config.key_file: " + gone("c.key") + atStart}, false},
	} {
		path := filepath.Join(dir, "c.yaml")
		if err := os.WriteFile(path, []byte("prometheus:\n  url: https://127.0.0.1:9090\n"+tc.client+target), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := Load(path)
		if err != nil {
			t.Fatalf("%s: %v, want valid", tc.client, err)
		}
		var got []string
		for _, w := range f.Warnings {
			got = append(got, w.Msg)
			if !strings.HasPrefix(w.Key, "prometheus.") {
				t.Errorf("%s: warning key %q", tc.client, w.Key)
			}
		}
		var msgs []string
		for _, w := range tc.warnings {
			msgs = append(msgs, w[strings.Index(w, ": ")+2:])
		}
		if strings.Join(got, "\n") != strings.Join(msgs, "\n") {
			t.Errorf("%s: warnings\n%s\nwant\n%s", tc.client, strings.Join(got, "\n"), strings.Join(msgs, "\n"))
		}
		for i, w := range f.Warnings {
			if i < len(tc.warnings) && w.Key != tc.warnings[i][:strings.Index(tc.warnings[i], ": ")] {
				t.Errorf("%s: warning %d key %q, want %q", tc.client, i, w.Key, tc.warnings[i])
			}
		}
		if _, err := f.Prometheus.RoundTripper(); (err == nil) != tc.clientOK {
			t.Errorf("%s: the client: %v, want made %v", tc.client, err, tc.clientOK)
		}
	}
}
