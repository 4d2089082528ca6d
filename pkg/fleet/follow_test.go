package fleet

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestDesiredFromURLBeyondInt: +Inf or a count past int64 (1e19)
// converted to the most negative int, and SetDesired's floor turned it
// into 0: the fleet scaled to nothing on a page asking for the most.
// +Inf is refused as NaN is (keep the current count); a finite count
// beyond any fleet is read as a count that large, which SetDesired caps
// at --max.
func TestDesiredFromURLBeyondInt(t *testing.T) {
	for _, c := range []struct {
		value string
		err   string
		least int
	}{
		{"+Inf", "desired +Inf", 0},
		{"1e19", "", 1 << 30},
		{"1e300", "", 1 << 30},
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			fmt.Fprintf(w, "infscale_desired_replicas{target=\"chat\"} %s\n", c.value)
		}))
		n, ok, err := DesiredFromURL(nil, srv.URL, "chat")(context.Background())
		srv.Close()
		switch {
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err) || ok):
			t.Errorf("%s: %d %v %v, want the error %q", c.value, n, ok, err, c.err)
		case c.err == "" && (err != nil || !ok || n < c.least):
			t.Errorf("%s: %d %v %v, want at least %d", c.value, n, ok, err, c.least)
		}
	}
}

// TestDesiredFromURLPair: a prefill/decode target's two series (role
// prefill 5, decode 2) were read as whichever came first, the fleet
// following one pool silently; two series of the target are an error
// naming their roles (keep the current count).
func TestDesiredFromURLPair(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "infscale_desired_replicas{role=\"decode\",target=\"chat\"} 2\ninfscale_desired_replicas{role=\"prefill\",target=\"chat\"} 5\n")
	}))
	defer srv.Close()
	n, ok, err := DesiredFromURL(nil, srv.URL, "chat")(context.Background())
	if err == nil || ok || !strings.Contains(err.Error(), `role="decode"`) || !strings.Contains(err.Error(), `role="prefill"`) {
		t.Errorf("pair: %d %v %v, want an error naming both roles", n, ok, err)
	}
}

// TestDesiredFromURLLargest: two series of one target without roles
// (differing in another label) read as their largest, as KEDA's
// max(infscale_desired_replicas{target=...}) does; one NaN among them is
// refused, as a lone NaN is.
func TestDesiredFromURLLargest(t *testing.T) {
	for page, want := range map[string]int{
		"infscale_desired_replicas{instance=\"a\",target=\"chat\"} 2\ninfscale_desired_replicas{instance=\"b\",target=\"chat\"} 5\n":   5,
		"infscale_desired_replicas{instance=\"a\",target=\"chat\"} 2\ninfscale_desired_replicas{instance=\"b\",target=\"chat\"} NaN\n": -1,
	} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, page) }))
		n, ok, err := DesiredFromURL(nil, srv.URL, "chat")(context.Background())
		srv.Close()
		if want < 0 && (err == nil || ok) || want >= 0 && (err != nil || !ok || n != want) {
			t.Errorf("%q: %d %v %v, want %d (-1: an error)", page, n, ok, err, want)
		}
	}
}

// TestDesiredFromURLOneRoleSeries: a page with one pool's series of a
// prefill/decode target (role="decode" alone: the other pool not decided
// yet, or its series dropped) was followed silently as the fleet's count,
// where two were refused; a role series is a pool of a pair, not the
// fleet, however many there are (docs/serve.md).
func TestDesiredFromURLOneRoleSeries(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "infscale_desired_replicas{role=\"decode\",target=\"chat\"} 2\n")
	}))
	defer srv.Close()
	n, ok, err := DesiredFromURL(nil, srv.URL, "chat")(context.Background())
	if err == nil || ok || !strings.Contains(err.Error(), `role="decode"`) {
		t.Errorf("one role series: %d %v %v, want an error naming the role", n, ok, err)
	}
}
