package trace

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// AzureHeader is the header of the Azure LLM inference trace 2023 CSV files
// (Azure Public Dataset, AzureLLMInferenceTrace_{conv,code}.csv; Patel et
// al., "Splitwise", ISCA 2024; CC-BY 4.0).
const AzureHeader = "TIMESTAMP,ContextTokens,GeneratedTokens"

// azureColumns are AzureHeader's columns (a header matches them quoted or
// not).
var azureColumns = strings.Split(AzureHeader, ",")

// azureLayout is the trace's timestamp format, UTC with 7 fractional digits
// ("2023-11-16 18:15:46.6805900").
const azureLayout = "2006-01-02 15:04:05.9999999"

// azureReader reads the Azure trace: the header line, then
// TIMESTAMP,ContextTokens,GeneratedTokens rows (CSV: any field may be
// quoted, as a spreadsheet or database export quotes them). Arrivals are
// seconds since the first row's timestamp.
type azureReader struct {
	*records
	t0      time.Time // the first row's
	started bool      // t0 is set
	order
}

// looksAzure reports a first row meant as an Azure header (it names
// ContextTokens or GeneratedTokens in any letter case), so that a near miss
// is refused naming the Azure header, not the generic CSV's.
func looksAzure(f []string) bool {
	for _, c := range f {
		c = strings.Trim(strings.TrimSpace(c), `"`)
		if strings.EqualFold(c, "ContextTokens") || strings.EqualFold(c, "GeneratedTokens") {
			return true
		}
	}
	return false
}

// OpenAzureCSV starts a pass over an Azure LLM inference trace CSV file.
// Its first line must be the header AzureHeader, quoted or not.
func OpenAzureCSV(name string) (Reader, error) {
	l, err := openLines(name)
	if err != nil {
		return nil, err
	}
	r := newRecords(l, 0)
	f, err := r.row()
	if err == nil && (r.line != 1 || !columns(f, azureColumns)) {
		found := ""
		if r.line == 1 {
			found = ", found " + clip(r.feed.raw)
		}
		err = r.errorf("want the header %s on the first line (an Azure LLM trace: those three columns in that order, the names case-sensitive)%s", AzureHeader, found)
	}
	if err == io.EOF {
		err = fmt.Errorf("%s:1: want the header %s, found an empty file", name, AzureHeader)
	}
	if err != nil {
		l.Close()
		return nil, err
	}
	a := &azureReader{records: r}
	a.show = func(t float64) string {
		if math.Abs(t) >= math.MaxInt64/1e9 { // 292 years: past a Duration
			return fmt.Sprintf("%.6g s after the first row", t)
		}
		return a.t0.Add(time.Duration(math.Round(t * 1e9))).Format(azureLayout)
	}
	return a, nil
}

func (r *azureReader) Next() (Request, error) {
	f, err := r.row()
	if err != nil {
		return Request{}, err
	}
	if len(f) != 3 {
		return Request{}, r.errorf("want 3 fields %s, got %d: %s", AzureHeader, len(f), clip(r.feed.raw))
	}
	ts, err := time.Parse(azureLayout, strings.TrimSpace(f[0]))
	if err != nil {
		return Request{}, r.errorf("TIMESTAMP %s: want YYYY-MM-DD HH:MM:SS.fffffff", clip(f[0]))
	}
	if !r.started { // not t0.IsZero(): 0001-01-01 00:00:00 is a first row too
		r.t0, r.started = ts, true
	}
	p, o, err := r.lengths(f[1], f[2], "ContextTokens", "GeneratedTokens")
	if err != nil {
		return Request{}, err
	}
	d := ts.Sub(r.t0)
	t := d.Seconds()
	if d == math.MaxInt64 || d == math.MinInt64 { // saturated: 292 years or more
		t = float64(ts.Unix()-r.t0.Unix()) + float64(ts.Nanosecond()-r.t0.Nanosecond())/1e9
	}
	if msg := r.check(t); msg != "" {
		return Request{}, r.errorf("%s", msg)
	}
	return request(t, p, o), nil
}
