package trace

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// BurstGPTHeader is the header of the BurstGPT trace CSV files
// (HPMLL/BurstGPT: BurstGPT_1.csv, BurstGPT_without_fails_1.csv, ...; Wang
// et al., arXiv 2401.17644; CC-BY 4.0). A file's header may list these six
// columns in any order, each quoted or not, and more (later releases add
// Session ID and Elapsed time), which are not read.
const BurstGPTHeader = "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type"

// burstgptColumns are BurstGPTHeader's columns.
var burstgptColumns = strings.Split(BurstGPTHeader, ",")

// burstgptLayout is where a BurstGPT file's columns are: the positions of
// the three it reads (Model, Total tokens, Log Type and any further
// column are not read) and how many columns a row has.
type burstgptLayout struct{ ts, req, resp, n int }

// burstgptIndex finds the columns of a BurstGPT header row: the six of
// BurstGPTHeader, each once, in any order, among any others (fields
// trimmed of spaces). It returns what is wrong otherwise.
func burstgptIndex(f []string) (burstgptLayout, error) {
	pos := make(map[string]int, len(burstgptColumns))
	for i, c := range f {
		c = strings.TrimSpace(c)
		if _, dup := pos[c]; dup {
			return burstgptLayout{}, fmt.Errorf("column %q twice", c)
		}
		pos[c] = i
	}
	for _, c := range burstgptColumns {
		if _, ok := pos[c]; !ok {
			for _, got := range f {
				if got = strings.TrimSpace(got); strings.EqualFold(got, c) {
					return burstgptLayout{}, fmt.Errorf("no column %q (found %q: the names are case-sensitive)", c, got)
				}
			}
			return burstgptLayout{}, fmt.Errorf("no column %q", c)
		}
	}
	return burstgptLayout{ts: pos["Timestamp"], req: pos["Request tokens"], resp: pos["Response tokens"], n: len(f)}, nil
}

// looksBurstGPT reports a first row that is meant as a BurstGPT header
// (it names one of the columns only BurstGPT has), so that a header with a
// column missing or misspelt is refused as a BurstGPT header, not read as
// a generic CSV.
func looksBurstGPT(f []string) bool {
	for _, c := range f {
		for _, b := range []string{"Request tokens", "Response tokens", "Total tokens", "Log Type"} {
			if strings.EqualFold(strings.TrimSpace(c), b) { // a case slip is a near miss too
				return true
			}
		}
	}
	return false
}

// burstgptReader reads a BurstGPT trace: the header line (its columns in
// any order), then one request a row. The arrival is Timestamp as it is,
// seconds since 0:00:00 of the trace's first day (not shifted to the
// first row: --window's seconds are the file's). Rows whose Request tokens
// is 0 are skipped and counted (Skipped): BurstGPT logs a failed request
// with no lengths (0,0,0), which has no prompt to replay.
type burstgptReader struct {
	*records
	col     burstgptLayout
	skipped int64
	order
}

// OpenBurstGPT starts a pass over a BurstGPT trace CSV file. Its first line
// must be the header BurstGPTHeader, its six columns in any order, quoted
// or not, among any others; the error says which column is missing or
// repeated.
func OpenBurstGPT(name string) (Reader, error) {
	l, err := openLines(name)
	if err != nil {
		return nil, err
	}
	r := newRecords(l, 0)
	f, err := r.row()
	var col burstgptLayout
	if err == nil {
		var herr error
		if col, herr = burstgptIndex(f); herr != nil || r.line != 1 {
			if herr == nil {
				herr = fmt.Errorf("not on the first line")
			}
			err = r.errorf("header: %v: want the header %s (those six columns in any order, others allowed) on the first line", herr, BurstGPTHeader)
		}
	}
	if err == io.EOF {
		err = fmt.Errorf("%s:1: want the header %s, found an empty file", name, BurstGPTHeader)
	}
	if err != nil {
		l.Close()
		return nil, err
	}
	return &burstgptReader{records: r, col: col}, nil
}

func (r *burstgptReader) Next() (Request, error) {
	for {
		f, err := r.row()
		if err != nil {
			return Request{}, err
		}
		if len(f) != r.col.n {
			return Request{}, r.errorf("want %d fields as the header's columns, got %d: %s", r.col.n, len(f), clip(r.feed.raw))
		}
		tf := f[r.col.ts]
		t, ok := decimalSeconds(tf)
		if !ok {
			return Request{}, r.errorf("Timestamp %s: want seconds >= 0 since the trace's start%s%s", clip(tf), noComma(tf), notDecimal(tf))
		}
		pf, of := f[r.col.req], f[r.col.resp]
		if p, ok := tokens(pf); ok && p == 0 {
			// A failed request logged without lengths: skipped, counted,
			// its other fields still checked.
			if _, ok := tokens(of); !ok {
				return Request{}, r.errorf("Response tokens %s: want an integer 0..%d%s", clip(of), math.MaxInt32, noComma(of))
			}
			if msg := r.check(t); msg != "" {
				return Request{}, r.errorf("%s", msg)
			}
			r.skipped++
			continue
		}
		p, o, err := r.lengths(pf, of, "Request tokens", "Response tokens")
		if err != nil {
			return Request{}, err
		}
		if msg := r.check(t); msg != "" {
			return Request{}, r.errorf("%s", msg)
		}
		return request(t, p, o), nil
	}
}

// Skipped returns how many rows this pass has skipped so far (Request
// tokens 0).
func (r *burstgptReader) Skipped() int64 { return r.skipped }

// SkippedRows returns how many rows the pass r has skipped so far without
// serving them (a BurstGPT row with Request tokens 0), 0 for a reader
// that skips none. It sees through RateScale, Window and Sorted.
func SkippedRows(r Reader) int64 {
	if s, ok := r.(interface{ Skipped() int64 }); ok {
		return s.Skipped()
	}
	return 0
}
