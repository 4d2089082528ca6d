package accuracy

import (
	"context"
	"strings"
	"testing"
)

const header = "experiment,model,hardware,tp,stage_index,stage_rate_rps,stage_duration_s,question_len,output_len_spec,actual_ttft_mean_ms\n"

// TestParseGroundTruthErrors: every bad cell is named by file:line:column
// and its column, all at once.
func TestParseGroundTruthErrors(t *testing.T) {
	for _, tc := range []struct{ name, body, want string }{
		{"rate", "e,m,H100,1,0,abc,600,100,10,5\n", "gt.csv:2:14: column stage_rate_rps: \"abc\" is not a finite number"},
		{"tp", "e,m,H100,1.5,0,1,600,100,10,5\n", "gt.csv:2:10: column tp: \"1.5\": want a whole number from 1 to 64"},
		{"stage rate missing", "e,m,H100,1,0,,600,100,10,5\n", "column stage_rate_rps: empty: a stage needs its arrival rate"},
		{"measured", "e,m,H100,1,0,1,600,100,10,-5\n", "column actual_ttft_mean_ms: -5: want milliseconds in (0, 1e10]"},
		// 1e300 ms made the stage's error 100%, the MAPE with it, exit 0;
		// the value is the row's 27th byte.
		{"measured huge", "e,m,H100,1,0,1,600,100,10,1e300\n", "gt.csv:2:27: column actual_ttft_mean_ms: 1e+300: want milliseconds in (0, 1e10] (1e10 ms is 1e7 s, the longest stage)"},
		// The header's 10 columns, a row of 3 (a file cut short).
		{"fields", "e,m,H100\n", "gt.csv:2: 3 fields, the header has 10 (a truncated file, or a comma in an unquoted field?)"},
		// Line 3's 11 fields: a stray comma, after a good line 2.
		{"fields, later line", "e,m,H100,1,0,1,600,100,10,5\ne,m,H100,1,1,1,600,100,10,5,\n", "gt.csv:3: 11 fields, the header has 10"},
	} {
		_, err := ParseGroundTruth("gt.csv", strings.NewReader(header+tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
	// A length out of range was skipped for the next column (or, the
	// last, for none): a prompt of 1e12 tokens replayed a 10 ms TTFT. The
	// value's column counted by hand: "e,m,H100,1,0,1,600,100," is 23 bytes.
	for _, tc := range []struct{ name, header, body, want string }{
		{"output 0", header, "e,m,H100,1,0,1,600,100,0,5\n", "gt.csv:2:24: column output_len_spec: 0: want a mean length in tokens from 1 to 16777216"},
		{"output huge", header, "e,m,H100,1,0,1,600,100,1e8,5\n", "gt.csv:2:24: column output_len_spec: 1e+08: want a mean length in tokens from 1 to 16777216"},
		{"prompt huge", strings.Replace(header, "question_len", "prompt_len_spec_mean", 1), "e,m,H100,1,0,1,600,1e12,10,5\n", "gt.csv:2:20: column prompt_len_spec_mean: 1e+12: want a mean length in tokens from 1 to 16777216"},
	} {
		_, err := ParseGroundTruth("gt.csv", strings.NewReader(tc.header+tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
	// A prompt column the row does not read (question_len given, or an
	// earlier prompt column) was not checked at all: 1e12 passed, exit 0,
	// where docs/evaluation/ACCURACY.md refuses every length column given.
	prompts := strings.Replace(header, "question_len", "question_len,prompt_len_spec_mean,prompt_len_meas_mean", 1)
	for _, tc := range []struct{ name, body, want string }{
		{"spec beside question_len", "e,m,H100,1,0,1,600,100,1e12,,10,5\n", "gt.csv:2:24: column prompt_len_spec_mean: 1e+12: want a mean length in tokens from 1 to 16777216"},
		{"meas beside question_len", "e,m,H100,1,0,1,600,100,500,-3,10,5\n", "gt.csv:2:28: column prompt_len_meas_mean: -3: want a mean length in tokens from 1 to 16777216"},
		{"meas after spec", "e,m,H100,1,0,1,600,0,500,-3,10,5\n", "gt.csv:2:26: column prompt_len_meas_mean: -3: want a mean length in tokens from 1 to 16777216"},
	} {
		_, err := ParseGroundTruth("gt.csv", strings.NewReader(prompts+tc.body))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
		}
	}
	if st, err := ParseGroundTruth("gt.csv", strings.NewReader(prompts+"e,m,H100,1,0,1,600,0,500,700,10,5\n")); err != nil || st[0].QuestionLen != 500 {
		t.Errorf("spec 500 before meas 700: %+v, %v; want the prompt 500", st, err)
	}
	if _, err := ParseGroundTruth("gt.csv", strings.NewReader(header+"e,m,H100,1,0,1,600,100,10,1e10\n")); err != nil {
		t.Errorf("1e10 ms (the bound): %v", err)
	}
	_, err := ParseGroundTruth("gt.csv", strings.NewReader("experiment,model\n"))
	if err == nil || !strings.Contains(err.Error(), "gt.csv:1: header lacks column(s) hardware, tp") {
		t.Errorf("header: err = %v", err)
	}
}

// TestOutputLengthImplied: without a measured output length, the means
// give it: ITL = (e2e - TTFT) / (output - 1), so e2e 1025, TTFT 25, ITL 5
// is 201 tokens, whatever the spec says.
func TestOutputLengthImplied(t *testing.T) {
	h := "experiment,model,hardware,tp,stage_index,stage_rate_rps,stage_duration_s,question_len,output_len_spec,actual_ttft_mean_ms,actual_itl_mean_ms,actual_e2e_mean_ms\n"
	st, err := ParseGroundTruth("gt.csv", strings.NewReader(h+"e,m,H100,1,0,1,600,100,250,25,5,1025\n"))
	if err != nil {
		t.Fatal(err)
	}
	if st[0].OutputLen != 201 {
		t.Errorf("output %d, want 201", st[0].OutputLen)
	}
}

// TestPredictTooManyRequests: a stage drawing more than MaxRequests is
// refused at its line instead of filling memory.
func TestPredictTooManyRequests(t *testing.T) {
	st, err := ParseGroundTruth("gt.csv", strings.NewReader(header+"e,llama-3-8b,H100,1,0,100000,1000000,100,10,5\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = Predict(context.Background(), st, Options{})
	if err == nil || !strings.Contains(err.Error(), "gt.csv:2: the stages of e draw about 1e+11 requests") {
		t.Errorf("err = %v", err)
	}
}

// TestMissingMeasuredColumns: a file without any measured column is
// refused at its header, naming the columns; a row with none of them
// filled is refused at its line; a column the file lacks is one warning,
// a cell left empty one warning for its row.
func TestMissingMeasuredColumns(t *testing.T) {
	h := "experiment,model,hardware,tp,stage_index,stage_rate_rps,stage_duration_s,question_len,output_len_spec"
	_, err := ParseGroundTruth("gt.csv", strings.NewReader(h+"\ne,m,H100,1,0,1,600,100,10\n"))
	if err == nil || !strings.Contains(err.Error(), "gt.csv:1: header lacks every measured column (actual_ttft_mean_ms, actual_ttft_p90_ms, actual_itl_mean_ms, actual_e2e_mean_ms, actual_e2e_p90_ms)") {
		t.Errorf("no measured column: err = %v", err)
	}
	h += ",actual_ttft_mean_ms,actual_e2e_mean_ms\n"
	_, err = ParseGroundTruth("gt.csv", strings.NewReader(h+"e,m,H100,1,0,1,600,100,10,5,100\ne,m,H100,1,1,1,600,100,10,,\n"))
	if err == nil || !strings.Contains(err.Error(), "gt.csv:3: no measured value: columns actual_ttft_mean_ms, actual_ttft_p90_ms, actual_itl_mean_ms, actual_e2e_mean_ms, actual_e2e_p90_ms are all empty or absent") {
		t.Errorf("empty row: err = %v", err)
	}
	st, err := ParseGroundTruth("gt.csv", strings.NewReader(h+"e,m,H100,1,0,1,600,100,10,5,100\ne,m,H100,1,1,1,600,100,10,,100\n"))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"gt.csv:1: no column actual_ttft_p90_ms: metric ttft_p90 is not compared",
		"gt.csv:1: no column actual_itl_mean_ms: metric itl_mean is not compared",
		"gt.csv:1: no column actual_e2e_p90_ms: metric e2e_p90 is not compared",
		"gt.csv:3: column actual_ttft_mean_ms empty: metric ttft_mean is not compared on this row",
	}
	if got := Warnings(st); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// TestDuplicateRowsRefused: a stage given twice (two files concatenated)
// would weigh twice in every MAPE, a peer's prediction given twice would
// be matched twice, and a header naming a column twice leaves unknown
// which field holds it: each is refused at its line.
func TestDuplicateRowsRefused(t *testing.T) {
	body := "e,m,H100,1,0,1,600,100,10,5\ne,m,H100,1,1,2,600,100,10,6\ne,m,H100,1,0,1,600,100,10,7\n"
	_, err := ParseGroundTruth("gt.csv", strings.NewReader(header+body))
	if want := `gt.csv:4: experiment "e" stage 0 repeats line 2: one row per experiment and stage; remove one`; err == nil || err.Error() != want {
		t.Errorf("ground truth: err = %v, want %q", err, want)
	}
	_, err = ParseGroundTruth("gt.csv", strings.NewReader(strings.Replace(header, "question_len", "tp", 1)+body))
	if want := "gt.csv:1: column tp appears twice (fields 4 and 8): which one holds the values is unknown; keep one"; err == nil || err.Error() != want {
		t.Errorf("header: err = %v, want %q", err, want)
	}
	peers := "experiment,stage_index,metric_name,simulator,predicted_ms\n" +
		"e,0,ttft_mean,vidur,10\ne,0,ttft_mean,blis,11\ne,1,ttft_mean,vidur,12\ne,0,ttft_mean,vidur,13\n"
	_, err = ParsePeers("peers.csv", strings.NewReader(peers))
	if want := `peers.csv:5: simulator vidur's ttft_mean of experiment "e" stage 0 repeats line 2: one prediction per simulator, metric and stage; remove one`; err == nil || err.Error() != want {
		t.Errorf("peers: err = %v, want %q", err, want)
	}
}

// TestParsePeersBounds: a peer's predicted_ms above 1e10 (1e7 s, the
// longest stage, the ground truth's bound) is refused at its line and
// column, the 15th byte of "e,0,ttft_mean,1e300"; it printed a MAPE of
// 300 digits through the table. 1e10 itself reads.
func TestParsePeersBounds(t *testing.T) {
	head := "experiment,stage_index,metric_name,predicted_ms,simulator\n"
	_, err := ParsePeers("peers.csv", strings.NewReader(head+"e,0,ttft_mean,1e300,vidur\n"))
	if want := `peers.csv:2:15: column predicted_ms: "1e300": want milliseconds from 0 to 1e10 (1e7 s, the longest stage)`; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
	if p, err := ParsePeers("peers.csv", strings.NewReader(head+"e,0,ttft_mean,1e10,vidur\n")); err != nil || len(p) != 1 {
		t.Errorf("1e10: %v, %v; want one prediction", p, err)
	}
}
