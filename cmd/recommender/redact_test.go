package main

import "testing"

// TestRedactURL: a password becomes xxxxx (url.URL.Redacted), an unparsable
// URL with an "@" is not shown, anything else is shown as typed.
func TestRedactURL(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"http://me:secret@host:9090/p", "http://me:xxxxx@host:9090/p"},
		{"http://host:9090", "http://host:9090"},
		{"not a url", "not a url"},
		{"http://me:secret@[::1", "(unparsable)"},
	} {
		if got := redactURL(c.in); got != c.want {
			t.Errorf("redactURL(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}
