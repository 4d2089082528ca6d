package scrape

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/modelserver"

	"github.com/infscale/infscale/internal/sharedtest"
)

// sharedTestdata is ../shared/testdata seen from the repository root
// (shared/testdata/LOG.md); tests that need it skip when it is absent.
const sharedTestdata = "../../../shared/testdata"

func sharedDir(t testing.TB, sub string) string {
	t.Helper()
	return sharedtest.Path(t, sub)
}

func readFile(t testing.TB, path string, server modelserver.Server) (*Page, error) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	return Read(f, "", filepath.Base(path), server)
}

func readString(t testing.TB, page string, server modelserver.Server) *Page {
	t.Helper()
	p, err := Read(strings.NewReader(page), "", "test.prom", server)
	if err != nil {
		t.Fatalf("Read: %v", err)
	}
	return p
}

// A is ABSENT in expectations.
var A = math.NaN()

// same compares floats treating NaN (ABSENT) as equal to NaN only, and
// otherwise exactly (values are read from decimal text, no arithmetic) or
// within 1e-9 relative when tol is set.
func same(got, want float64) bool {
	if math.IsNaN(want) || math.IsNaN(got) {
		return math.IsNaN(want) && math.IsNaN(got)
	}
	return math.Abs(got-want) <= 1e-9*math.Max(1, math.Abs(want))
}

func checkFloat(t *testing.T, what string, got, want float64) {
	t.Helper()
	if !same(got, want) {
		t.Errorf("%s = %v, want %v", what, got, fmtWant(want))
	}
}

func fmtWant(v float64) any {
	if math.IsNaN(v) {
		return "ABSENT (NaN)"
	}
	return v
}

var t0 = time.Unix(1700000000, 0)
