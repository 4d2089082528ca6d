package backtest

import (
	"bytes"
	"math"
	"strings"
	"testing"
)

// TestWriteCSVObservedRequests: the observed row's requests are the
// reconstructed total, a sum of counter increases (1058463.2167 over a
// day of the synthetic week), written whole as the text table prints it
// (1058463), not as a fractional count of requests; the pair's CSV too
// (1999.6: 2000).
func TestWriteCSVObservedRequests(t *testing.T) {
	nan := math.NaN()
	var b bytes.Buffer
	rep := Report{Requests: 1058463.2166666668, Actual: Actual{ReplicaMinutes: 5611, Peak: 6, TTFTP95: 0.22, MissPct: 0}}
	if err := rep.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(b.String(), "\n")
	if want := "actual (observed),1058463,,0,,0.22,5611,,6,"; len(lines) < 2 || lines[1] != want {
		t.Errorf("observed row %q; want %q", lines[1], want)
	}
	b.Reset()
	pair := PairReport{Requests: 1999.6, Actual: PairActual{PrefillMinutes: nan, DecodeMinutes: nan, PrefillPeak: nan, DecodePeak: nan}}
	if err := pair.WriteCSV(&b); err != nil {
		t.Fatal(err)
	}
	if lines = strings.Split(b.String(), "\n"); len(lines) < 2 || !strings.HasPrefix(lines[1], "actual (observed),2000,") {
		t.Errorf("pair's observed row %q; want it to begin \"actual (observed),2000,\" (1999.6 requests, whole)", lines[1])
	}
}
