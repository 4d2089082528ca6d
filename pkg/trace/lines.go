package trace

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/infscale/infscale/internal/boundedfile"
	"github.com/infscale/infscale/internal/quantity"
)

// MaxLine is the longest line a trace file may have, in bytes (a Mooncake
// row with a 200,000-token prompt is about 3 KB).
const MaxLine = 1 << 20

// utf8BOM is the byte order mark some editors put before a file's first line.
var utf8BOM = []byte{0xef, 0xbb, 0xbf}

// lines reads a text file line by line, counting lines for error messages.
type lines struct {
	name string
	f    *os.File
	br   *bufio.Reader
	line int    // number of the line last returned (1-based)
	buf  []byte // a line longer than br's buffer, gathered
	// cut is set when the line last returned is the file's last and has
	// no line end: where a file cut while being written stops.
	cut bool
	// cr is set when the line last returned holds a carriage return.
	cr bool
}

// MaxTraceBytes bounds a trace file (4 GiB). A trace is streamed line by
// line (memory does not grow with it); the cap keeps a runaway file from
// running a replay for ever.
const MaxTraceBytes = 4 << 30

// openTrace opens a trace file with internal/boundedfile: a regular file
// of at most MaxTraceBytes, opened without blocking (a FIFO is refused).
func openTrace(name string) (*os.File, error) {
	return boundedfile.Open(name, MaxTraceBytes, "a trace", "a trace is read more than once (a pass per policy in simulate and tune; load's check, then its replay); save it to a file first")
}

func openLines(name string) (*lines, error) {
	f, err := openTrace(name)
	if err != nil {
		return nil, err
	}
	return &lines{name: name, f: f, br: bufio.NewReaderSize(f, 1<<16)}, nil
}

// nextNonBlank returns the next line that is not blank (spaces only), as
// next does.
func (l *lines) nextNonBlank() ([]byte, error) {
	for {
		b, err := l.next()
		if err != nil || len(bytes.TrimSpace(b)) > 0 {
			return b, err
		}
	}
}

// next returns the next line without its line ending (valid until the next
// call), or io.EOF.
func (l *lines) next() ([]byte, error) {
	// The common case: the line is in br's buffer, returned without a copy;
	// a line longer than the buffer is gathered in buf.
	b, err := l.br.ReadSlice('\n')
	if err == bufio.ErrBufferFull {
		l.buf = append(l.buf[:0], b...)
		for err == bufio.ErrBufferFull && len(l.buf) <= MaxLine {
			b, err = l.br.ReadSlice('\n')
			l.buf = append(l.buf, b...)
		}
		b = l.buf
	}
	if len(b) > MaxLine {
		return nil, fmt.Errorf("%s:%d: a line longer than %d bytes: not a trace (a binary file?)", l.name, l.line+1, MaxLine)
	}
	if err == io.EOF {
		if len(b) == 0 {
			return nil, io.EOF
		}
	} else if err != nil {
		return nil, fmt.Errorf("%s: %w", l.name, err)
	}
	l.line++
	l.cut = err == io.EOF
	b = bytes.TrimRight(b, "\r\n")
	l.cr = bytes.IndexByte(b, '\r') >= 0
	if l.line == 1 {
		b = bytes.TrimPrefix(b, utf8BOM) // spreadsheets write one
	}
	if bytes.IndexByte(b, 0) >= 0 || !utf8.Valid(b) {
		const msg = "a NUL byte or invalid UTF-8: not a trace, which is text (CSV or JSON lines); a binary or compressed file? (decompress it first)"
		if l.cut && !halfRuneAtEnd(b) { // binary, not a row cut mid-character: no cut note
			return nil, fmt.Errorf("%s:%d: %s", l.name, l.line, msg)
		}
		return nil, l.errorf(msg)
	}
	return b, nil
}

func (l *lines) Close() error { return l.f.Close() }

// halfRuneAtEnd reports whether b's only fault is a multi-byte character
// cut short at its end (text without NUL bytes, valid UTF-8 before it).
func halfRuneAtEnd(b []byte) bool {
	i := len(b) - 1
	for i > 0 && !utf8.RuneStart(b[i]) {
		i--
	}
	return i >= 0 && bytes.IndexByte(b, 0) < 0 && utf8.Valid(b[:i]) && !utf8.FullRune(b[i:])
}

// errorf formats an error at the current line: "file:line: ...". On the
// file's last line without a line end it adds cutHint: a row cut short
// (fewer fields, half a number or timestamp, an unclosed quote or JSON
// object) is where a file still being written, or copied half, ends.
func (l *lines) errorf(format string, args ...any) error {
	msg := fmt.Sprintf("%s:%d: %s", l.name, l.line, fmt.Sprintf(format, args...))
	switch {
	case l.cr: // the whole file, or much of it, read as one line
		msg += crHint
	case l.cut:
		msg += cutHint
	}
	return errors.New(msg)
}

// cutHint is errorf's note on a last line without a line end. A cut row
// that still reads as one (a number cut to fewer digits: 128 to 12) cannot
// be told from a complete row, so a last line without a line end is not
// refused by itself: editors save files without one.
const cutHint = " (the file's last line, with no line end: was the file cut while being written? wait for it to be complete, or delete the partial row)"

// crHint is errorf's note on a line with a carriage return inside it: a
// file whose lines end in CR alone reads as one line.
const crHint = " (the line holds a carriage return (CR): line ends of CR alone, as classic Mac OS wrote? convert them to LF or CRLF)"

// clip quotes a field or line for an error message, cut to its first 60
// bytes (a binary file has no useful line to show whole).
func clip[T string | []byte](b T) string {
	const n = 60
	if len(b) <= n {
		return strconv.Quote(string(b))
	}
	return strconv.Quote(string(b[:n])) + fmt.Sprintf("... (%d bytes)", len(b))
}

// noComma is the advice for a number field with a comma in it (a quoted
// "1,000" or "0,5"), else "".
func noComma(field string) string {
	if strings.Contains(field, ",") {
		return " (without a thousands separator or a decimal comma: 1000, 0.5)"
	}
	return ""
}

// tokens parses a token count field: a non-negative integer below 2^31.
func tokens(field string) (int32, bool) {
	v, err := strconv.ParseInt(strings.TrimSpace(field), 10, 32)
	if err != nil || v < 0 {
		return 0, false
	}
	return int32(v), true
}

// lengths reads a request's prompt and output lengths from their fields
// (named pname and oname in errors): the prompt 1..MaxInt32 tokens, the
// output 0..MaxInt32.
func (l *lines) lengths(pf, of string, pname, oname string) (prompt, output int32, err error) {
	p, ok := tokens(pf)
	if !ok || p < 1 {
		return 0, 0, l.errorf("%s %s: want an integer 1..%d%s", pname, clip(pf), math.MaxInt32, noComma(pf))
	}
	o, ok := tokens(of)
	if !ok {
		return 0, 0, l.errorf("%s %s: want an integer 0..%d%s", oname, clip(of), math.MaxInt32, noComma(of))
	}
	return p, o, nil
}

// order checks that arrivals do not go back in time.
type order struct {
	last      float64
	seen, off bool
	// show writes an arrival (seconds from the trace's zero) as the file
	// writes its times, for the complaint: Mooncake's milliseconds,
	// Azure's dates (its seconds count from the first row, so a row
	// before it read "-6.68059 s"); nil: seconds.
	show func(t float64) string
}

// unordered turns the check off (for Sorted).
func (o *order) unordered() { o.off = true }

// check returns a non-empty complaint when t is before the previous arrival.
func (o *order) check(t float64) string {
	if o.seen && t < o.last && !o.off {
		show := o.show
		if show == nil {
			show = func(t float64) string { return fmt.Sprintf("%.6g s", t) }
		}
		return fmt.Sprintf("timestamp %s is before the previous row's %s: rows must be in arrival order (or pass --sort)", show(t), show(o.last))
	}
	o.seen, o.last = true, t
	return ""
}

// request builds a Request from parsed fields; an output of 0 is served as
// one token (the prefill always produces the first token).
func request(arrival float64, prompt, output int32) Request {
	if output < 1 {
		output = 1
	}
	if arrival == 0 {
		arrival = 0 // a row's -0 is second 0: negative zero printed as "-0 s"
	}
	return Request{Arrival: arrival, Prompt: prompt, Output: output}
}

// decimalSeconds reads a time field as a finite decimal number >= 0
// (quantity.Decimal: Go's hex floats and digit separators, which no trace
// writes and token counts refuse, are not read).
func decimalSeconds(field string) (float64, bool) {
	t, err := quantity.Decimal(strings.TrimSpace(field))
	return t, err == nil && t >= 0 && !math.IsInf(t, 0) && !math.IsNaN(t)
}

// notDecimal is the advice for a time field in hex-float or
// digit-separator syntax, else "".
func notDecimal(field string) string {
	if _, err := quantity.Decimal(strings.TrimSpace(field)); errors.Is(err, quantity.ErrNotDecimal) {
		return " (" + quantity.ErrNotDecimal.Error() + ")"
	}
	return ""
}
