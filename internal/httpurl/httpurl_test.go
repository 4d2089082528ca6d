package httpurl

import (
	"errors"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want error // nil: accepted
	}{
		{"http://127.0.0.1:8000", nil},
		{"https://prometheus", nil},
		{"http://h:1/metrics", nil},
		{"http://h:65535", nil},
		{"http://[::1]:9090", nil},
		{"http://h:/", nil}, // empty port: the default
		{"http://h:0", ErrPort},
		{"http://h:65536", ErrPort},
		{"http://127.0.0.1:99999", ErrPort},
		{"http://[::1]:99999/metrics", ErrPort},
		{"ftp://h", ErrNotHTTP},
		{"h:8000", ErrNotHTTP},
		{"http://", ErrNotHTTP},
		{"/metrics", ErrNotHTTP},
	} {
		_, err := Parse(tc.in)
		if tc.want == nil && err != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("Parse(%q) = %v, want %v", tc.in, err, tc.want)
		}
	}
	if _, err := Parse("http://h:99999"); err == nil || err.Error() != "port 99999: want 1 to 65535" {
		t.Errorf("error text %v", err)
	}
}
