package replay

import (
	"bytes"
	"strings"
	"testing"
)

// TestCSVFloatNoExponent: a CSV cell is the shortest decimal that reads
// back as the value, without an exponent: Go's 'g' wrote 4839674.4 as
// 4.8396744e+06 and 0.00005 as 5e-05, which a spreadsheet may take for
// text.
func TestCSVFloatNoExponent(t *testing.T) {
	for _, tc := range []struct {
		x    float64
		want string
	}{
		{4839674.399999999, "4839674.399999999"},
		{5041327.5, "5041327.5"},
		{0.00005, "0.00005"},
		{0.004, "0.004"}, // a miss share of 0.004%: exact, not 0.00
		{1500, "1500"},
		{0, "0"},
	} {
		if got := CSVFloat(tc.x); got != tc.want {
			t.Errorf("CSVFloat(%v) = %q, want %q", tc.x, got, tc.want)
		}
	}
	// A row's every float column, through WriteCSV: 48 replica-minutes are
	// 0.8 GPU-hours on one GPU, and 4,033,062 output tokens / 0.8 =
	// 5,041,327.5 per GPU-hour.
	gh, cost, tok, p50 := 0.8, 3.2, 5041327.5, 0.00005
	var b bytes.Buffer
	if err := WriteCSV(&b, []Row{{Policy: "queue:24", Trace: "reference", Requests: 15783, MissPct: 0.004, TTFTP50: &p50, ReplicaMinutes: 48,
		GPUHours: &gh, GPUCost: &cost, OutputTokens: 4033062, TokensPerGPUHour: &tok, Duration: 1500}}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if want := "queue:24,reference,15783,0,0,0,0,0,0.004,0.00005,,48,0.8,3.2,0,0,0,4033062,5041327.5,1500"; len(lines) != 2 || lines[1] != want {
		t.Errorf("CSV %q\nwant the row %q", b.String(), want)
	}
}
