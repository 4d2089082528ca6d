package sharedtest

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// recorder is a testing.TB whose Fatalf and Skipf record what they were
// called with and end the goroutine, as the real ones do.
type recorder struct {
	testing.TB
	fatal, skip string
}

func (r *recorder) Helper() {}
func (r *recorder) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}
func (r *recorder) Skipf(format string, args ...any) {
	r.skip = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// call runs Path(r, elem...) on its own goroutine (Goexit ends it).
func call(r *recorder, elem ...string) (got string) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		got = Path(r, elem...)
	}()
	<-done
	return got
}

func TestPathAbsent(t *testing.T) {
	const missing = "no-such-directory-in-shared-testdata"
	for _, ci := range []string{"", "false", "true"} {
		t.Run("CI="+ci, func(t *testing.T) {
			t.Setenv("CI", ci)
			r := &recorder{TB: t}
			call(r, missing)
			if ci == "true" {
				if r.fatal == "" || r.skip != "" {
					t.Fatalf("CI=true: fatal %q, skip %q; want a failure", r.fatal, r.skip)
				}
				if !strings.Contains(r.fatal, missing) {
					t.Errorf("failure %q does not name the path", r.fatal)
				}
				return
			}
			if r.skip == "" || r.fatal != "" {
				t.Fatalf("CI=%q: fatal %q, skip %q; want a skip", ci, r.fatal, r.skip)
			}
		})
	}
}

// The path is beside the repository root: this package sits at
// internal/sharedtest, two levels below it, so ../../../shared/testdata.
func TestPathBesideRepository(t *testing.T) {
	t.Setenv("CI", "")
	got, err := path("cases", "x.prom")
	if err != nil {
		t.Fatal(err)
	}
	want, err := filepath.Abs(filepath.Join("..", "..", "..", "shared", "testdata", "cases", "x.prom"))
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("path = %s, want %s", got, want)
	}
	// An existing path is returned as is, without skipping.
	if _, err := os.Stat(filepath.Join("..", "..", "..", "shared", "testdata")); err == nil {
		r := &recorder{TB: t}
		if p := call(r); r.skip != "" || r.fatal != "" || filepath.Base(p) != "testdata" {
			t.Errorf("Path() = %q, skip %q, fatal %q", p, r.skip, r.fatal)
		}
	}
}
