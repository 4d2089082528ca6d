package trace

import (
	"encoding/csv"
	"errors"
	"io"
	"strings"
)

// records reads the rows of a CSV trace with encoding/csv (RFC 4180:
// quoted fields, "" for a quote inside one). lines feeds the parser one
// line at a time, so lines keeps doing what it does for every format (line
// numbers, the UTF-8 byte order mark, CRLF, the MaxLine cap, the binary
// check, blank lines) and a row is exactly one line: a quoted field that
// is not closed on its line is an error at that line, never a row that
// runs on through the rest of the file.
type records struct {
	*lines
	cr   *csv.Reader
	feed feed
}

// newRecords reads the CSV rows of l; lines starting with comment are
// skipped (0: none are).
func newRecords(l *lines, comment byte) *records {
	r := &records{lines: l, feed: feed{l: l, comment: comment}}
	r.cr = csv.NewReader(&r.feed)
	r.cr.FieldsPerRecord = -1 // the readers say what a row needs
	r.cr.ReuseRecord = true
	// Not TrimLeadingSpace: it costs a tenth of a row's parse, and the
	// readers trim unquoted fields themselves; a space before a quoted
	// field is an error saying so.
	return r
}

// errUnclosed ends a line's feed when the parser asks for the next line
// within the same row: a quoted field runs past the line's end.
var errUnclosed = errors.New("a quoted field is not closed on its line")

// feed is the io.Reader csv.Reader parses: the current row's line and its
// '\n', then errUnclosed until the next row starts.
type feed struct {
	l       *lines
	comment byte
	raw     []byte // the line being parsed (valid until the next row)
	cur     []byte // the part of raw not yet read
	nl      bool   // raw's '\n' is still to be read
	fed     bool   // this row's line has been read from l
	err     error  // l's error (not io.EOF) that ended the feed
}

func (f *feed) Read(p []byte) (int, error) {
	if len(f.cur) == 0 && !f.nl {
		if f.fed {
			return 0, errUnclosed
		}
		b, err := f.l.nextNonBlank()
		for err == nil && f.comment != 0 && b[0] == f.comment {
			b, err = f.l.nextNonBlank()
		}
		if err != nil {
			if err != io.EOF {
				f.err = err
			}
			return 0, err
		}
		f.raw, f.cur, f.nl, f.fed = b, b, true, true
	}
	n := copy(p, f.cur)
	f.cur = f.cur[n:]
	if len(f.cur) == 0 && f.nl && n < len(p) {
		p[n] = '\n'
		n++
		f.nl = false
	}
	return n, nil
}

// row returns the next row's fields (valid until the next call; the line
// is r.line, its text r.feed.raw), or io.EOF, or an error at its line
// saying what is wrong with the quoting.
func (r *records) row() ([]string, error) {
	r.feed.fed = false
	rec, err := r.cr.Read()
	switch {
	case err == nil:
		return rec, nil
	case err == io.EOF:
		return nil, io.EOF
	case r.feed.err != nil:
		return nil, r.feed.err // already "file:line: ..."
	case errors.Is(err, errUnclosed):
		return nil, r.errorf(`a quoted field is not closed on its line (a trace's fields never span lines): end it with '"': %s`, clip(r.feed.raw))
	}
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		switch {
		case errors.Is(pe.Err, csv.ErrBareQuote) && spaceBefore(r.feed.raw, pe.Column-1):
			return nil, r.errorf(`column %d: a space before a quoted field's opening '"': remove it (a quoted field starts right after the ','): %s`, pe.Column, clip(r.feed.raw))
		case errors.Is(pe.Err, csv.ErrBareQuote):
			return nil, r.errorf(`column %d: a '"' inside an unquoted field: quote the whole field ("...", with "" for a quote inside it) or remove it: %s`, pe.Column, clip(r.feed.raw))
		case errors.Is(pe.Err, csv.ErrQuote):
			return nil, r.errorf(`column %d: a quoted field goes on after its closing '"': put the ',' right after the closing quote (and write "" for a quote inside the field): %s`, pe.Column, clip(r.feed.raw))
		}
		return nil, r.errorf("column %d: %v: %s", pe.Column, pe.Err, clip(r.feed.raw))
	}
	return nil, r.errorf("%v", err)
}

// spaceBefore reports whether the byte at line[i] (a '"') has only spaces
// and tabs before it in its field.
func spaceBefore(line []byte, i int) bool {
	if i <= 0 || i >= len(line) {
		return false
	}
	for j := i - 1; j >= 0 && line[j] != ','; j-- {
		if line[j] != ' ' && line[j] != '\t' {
			return false
		}
	}
	return true
}

// columns reports whether fields are cols, each field trimmed of spaces
// (a header row, quoted or not).
func columns(fields []string, cols []string) bool {
	if len(fields) != len(cols) {
		return false
	}
	for i, c := range cols {
		if strings.TrimSpace(fields[i]) != c {
			return false
		}
	}
	return true
}

// headerFields parses a file's first line (without the byte order mark) as
// a CSV row, for format detection; nil when it is not one.
func headerFields(line string) []string {
	cr := csv.NewReader(strings.NewReader(line))
	cr.FieldsPerRecord = -1
	rec, err := cr.Read()
	if err != nil {
		return nil
	}
	return rec
}
