package activator

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestReadHeld: the held gauge summed over its series; a page without it,
// or with NaN, ±Inf or a negative count, is an error (unknown, never a
// number to decide on).
func TestReadHeld(t *testing.T) {
	for _, tc := range []struct {
		page, err string
		held      float64
	}{
		{"infscale_activator_held_requests{route=\"a\"} 3\ninfscale_activator_held_requests{route=\"b\"} 2\ninfscale_activator_upstream_ready 1\n", "", 5},
		{"other 1\n", "no infscale_activator_held_requests", 0},
		{"infscale_activator_held_requests NaN\n", "is NaN: not a count", 0},
		{"infscale_activator_held_requests +Inf\n", "is +Inf: not a count", 0},
		{"infscale_activator_held_requests -4\n", "is -4: not a count", 0},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, tc.page) }))
		p, err := ReadHeld(context.Background(), srv.Client(), srv.URL)
		srv.Close()
		switch {
		case tc.err == "" && (err != nil || p.Held != tc.held):
			t.Errorf("%q: %+v, %v; want held %v", tc.page, p, err, tc.held)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: %+v, %v; want an error with %q", tc.page, p, err, tc.err)
		}
	}
}
