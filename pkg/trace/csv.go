package trace

import (
	"strconv"
	"strings"
)

// GenericHeader is the header line of the generic CSV format (optional in
// the file): arrival in seconds since the start, prompt tokens, output tokens.
const GenericHeader = "arrival_s,prompt_tokens,output_tokens"

// genericColumns are GenericHeader's columns.
var genericColumns = strings.Split(GenericHeader, ",")

// genericReader reads the generic CSV: arrival_s,prompt_tokens,output_tokens
// with an optional header line; arrival_s is a non-negative number of
// seconds, tokens are integers (prompt >= 1, output >= 0); any field may be
// quoted. Blank lines and lines starting with '#' are skipped.
type genericReader struct {
	*records
	order
}

// OpenGenericCSV starts a pass over a generic CSV file.
func OpenGenericCSV(name string) (Reader, error) {
	l, err := openLines(name)
	if err != nil {
		return nil, err
	}
	return &genericReader{records: newRecords(l, '#')}, nil
}

func (r *genericReader) Next() (Request, error) {
	for {
		f, err := r.row()
		if err != nil {
			return Request{}, err
		}
		if r.line == 1 && columns(f, genericColumns) {
			continue
		}
		if r.line == 1 && isHeader(f) {
			return Request{}, r.errorf("header %s: want %s, those columns in that order (or no header)", clip(r.feed.raw), GenericHeader)
		}
		if len(f) != 3 {
			return Request{}, r.errorf("want 3 fields %s, got %d: %s", GenericHeader, len(f), clip(r.feed.raw))
		}
		t, ok := decimalSeconds(f[0])
		if !ok {
			return Request{}, r.errorf("arrival_s %s: want a finite number of seconds >= 0%s%s", clip(f[0]), noComma(f[0]), notDecimal(f[0]))
		}
		p, o, err := r.lengths(f[1], f[2], "prompt_tokens", "output_tokens")
		if err != nil {
			return Request{}, err
		}
		if msg := r.check(t); msg != "" {
			return Request{}, r.errorf("%s", msg)
		}
		return request(t, p, o), nil
	}
}

// isHeader reports a first row of three fields that is a header, not a
// row: its first field starts with a letter and is not a number (NaN and
// Inf are numbers, refused as arrival times).
func isHeader(f []string) bool {
	if len(f) != 3 {
		return false
	}
	first := strings.TrimSpace(f[0])
	if len(first) == 0 || !(first[0] >= 'a' && first[0] <= 'z' || first[0] >= 'A' && first[0] <= 'Z') {
		return false
	}
	_, err := strconv.ParseFloat(first, 64)
	return err != nil
}
