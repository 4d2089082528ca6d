package scrape

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"mime"
	"sort"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"

	"github.com/infscale/infscale/pkg/modelserver"
)

// MaxPageBytes bounds a page (4 MiB); a larger one is invalid and no more
// of it is read than the cap (memory stays bounded whatever the server
// sends). Real pages are far smaller: the largest of the reference pages
// the tests read (a Triton page) is 8.9 KB, and a vLLM server
// with every histogram, many models and LoRA adapters stays in the
// hundreds of KB; 4 MiB is some 450 times the largest seen. A 45 MB page of
// a million series took serve to 688 MB RSS under the old 64 MiB cap.
const MaxPageBytes = 4 << 20

// Content types Read understands.
const (
	// ContentTypeText is the Prometheus text exposition format 0.0.4.
	ContentTypeText = "text/plain; version=0.0.4"
	// ContentTypeOpenMetrics is OpenMetrics 1.0.
	ContentTypeOpenMetrics = "application/openmetrics-text; version=1.0.0"
)

// Read parses one /metrics page from r and reduces it to a Page.
//
// contentType is the HTTP Content-Type ("" for files: a page with a `# EOF`
// line is OpenMetrics, any other is the text format). source names the page
// in errors and in Page.Source. server Unknown auto-detects the profile:
// the first server (modelserver.Servers order) whose running/waiting families
// have a finite sample, else appear on the page (declared or with samples),
// else whose other families appear, else whose name prefix appears.
//
// Errors: *PageError (errors.Is ErrInvalidPage) naming source:line for a
// page that does not parse, for JSON/HTML bodies and unsupported content
// types, and for garbage the parser accepts (NUL bytes, a text page whose
// last line has no newline, a series twice, impossible values: see
// checkValues) and for a page of another server than the one given (none
// of server's families on it, another's are) — no partial page is returned; *NoProfileError (ErrNoProfile) when
// server is Unknown and nothing matches, listing the families looked for;
// ErrFetch when r fails.
func Read(r io.Reader, contentType, source string, server modelserver.Server) (*Page, error) {
	b, err := readAll(r, source)
	if err != nil {
		return nil, err
	}
	return readBytes(b, contentType, source, server)
}

// readAll reads a page's body from r, at most MaxPageBytes (a larger page
// is refused after MaxPageBytes+1 bytes: memory stays bounded). Errors:
// ErrFetch when r fails, a *PageError naming source for a larger page.
func readAll(r io.Reader, source string) ([]byte, error) {
	b, err := io.ReadAll(io.LimitReader(r, MaxPageBytes+1))
	if errors.Is(err, io.ErrUnexpectedEOF) {
		return nil, fmt.Errorf("%s: %w: reading: %w: the body was cut short (the connection closed early, or a compressed body was truncated): scrape again; if it persists, check the server and any proxy in between", source, ErrFetch, err)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w: reading: %w", source, ErrFetch, err)
	}
	if len(b) > MaxPageBytes {
		return nil, tooLarge(source)
	}
	return b, nil
}

// tooLarge is the error for a page over MaxPageBytes.
func tooLarge(source string) error {
	return &PageError{Source: source, Err: fmt.Errorf("page larger than %d bytes, the most infscale reads of one replica's page: is it one model server's /metrics, not a federation endpoint's, an exporter's of a whole node, or a download?", MaxPageBytes)}
}

// gzipMagic starts gzip-compressed data (RFC 1952).
var gzipMagic = []byte{0x1f, 0x8b}

// parsePage parses the body b of a page (of any kind: a model server's, a
// holder's) whose HTTP Content-Type is contentType ("" for files), and
// returns it with the exposition format it was read as. Errors
// are *PageError naming source:line: gzip-compressed data, NUL bytes, a body that is not an
// exposition format (JSON, HTML) or does not parse, a text page whose last
// line has no newline (truncated).
func parsePage(b []byte, contentType, source string) (raw *rawPage, ct string, err error) {
	if bytes.HasPrefix(b, gzipMagic) {
		return nil, "", &PageError{Source: source, Line: 1,
			Err: errors.New("gzip-compressed data, not a text page: decompress it first (gunzip it, or save a live page with curl --compressed)")}
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		return nil, "", &PageError{Source: source, Line: 1 + bytes.Count(b[:i], []byte("\n")),
			Err: errors.New("NUL byte: binary data, not a text page (Prometheus's parser would silently stop reading here)")}
	}
	ct, err = mediaType(b, contentType)
	if _, ok := err.(headerError); ok {
		// The HTTP header, not a line of the body, is at fault.
		return nil, "", &PageError{Source: source, Err: err}
	}
	if err != nil {
		// The line the body starts on (a JSON or HTML body after blank lines).
		lead := len(b) - len(bytes.TrimLeft(b, " \t\r\n\ufeff"))
		return nil, "", &PageError{Source: source, Line: 1 + bytes.Count(b[:lead], []byte("\n")), Err: err}
	}
	raw, err = parse(b, ct)
	if err != nil {
		line := locate(b, ct, err)
		err = withHint(b, ct, contentType, err, lineText(b, line))
		if ct == ContentTypeText && len(b) > 0 && b[len(b)-1] != '\n' && line == 1+bytes.Count(b, []byte("\n")) {
			// The parser's complaint is about a line cut short (a
			// truncated download or paste), not about what it says.
			err = fmt.Errorf("%w; the last line has no newline: the page looks cut short mid-line (the text format ends every line with \\n): read the whole page", err)
		}
		return nil, "", &PageError{Source: source, Line: line, Err: err}
	}
	raw.selectSeries()
	if ct == ContentTypeText && len(b) > 0 && b[len(b)-1] != '\n' {
		return nil, "", &PageError{Source: source, Line: 1 + bytes.Count(b, []byte("\n")),
			Err: errors.New("the last line does not end with a newline: the page looks truncated (the text format ends every line with \\n)")}
	}
	return raw, ct, nil
}

func readBytes(b []byte, contentType, source string, server modelserver.Server) (*Page, error) {
	raw, ct, err := parsePage(b, contentType, source)
	if err != nil {
		return nil, err
	}
	if server == modelserver.Unknown {
		server = detect(raw)
		if server == modelserver.Unknown {
			e := noProfile(source, raw)
			e.Size, e.Blank = len(b), len(bytes.TrimSpace(b)) == 0
			return nil, e
		}
	} else if err := otherServer(raw, server); err != nil {
		return nil, &PageError{Source: source, Err: err}
	}
	p := reduce(raw, source, server)
	if j, err := checkValues(raw, p); err != nil {
		line := 0
		switch {
		case j >= 0 && raw.offsets[j] >= 0:
			line = lineAt(b, raw.offsets[j])
		case j >= 0:
			line = sampleLine(b, ct, j)
		}
		pe := &PageError{Source: source, Line: line, Err: err}
		var several severalWorkers
		var pools *severalPools
		switch {
		case errors.As(err, &several):
			pe.What = "not one replica's metrics page"
		case errors.As(err, &pools):
			pe.What = "not one Endpoint Picker's page"
		}
		return nil, pe
	}
	return p, nil
}

// withHint adds a likely cause to a parse error of b, read as ct (from the
// HTTP Content-Type contentType, "" for files), at the line whose text is
// line: an OpenMetrics page
// without # EOF, Windows line endings or a byte-order mark, which the exposition formats do not allow,
// OpenMetrics syntax (an exemplar, a timestamp in seconds) on a page read as the text format; a number that
// does not parse (strconv's error, which the parser passes up raw) is said
// in words with the value and the line.
func withHint(b []byte, ct, contentType string, err error, line []byte) error {
	var ne *strconv.NumError
	var oe *offsetError
	if ct == ContentTypeText {
		if what := openMetricsSyntax(line); what != "" {
			how := "no # EOF line"
			if contentType != "" {
				how = fmt.Sprintf("Content-Type %q", contentType)
			}
			return fmt.Errorf("%w (the line carries %s, which only OpenMetrics allows; the page was read as the text format (%s): give the whole OpenMetrics page, which ends with # EOF, or serve it as application/openmetrics-text)", err, what, how)
		}
	}
	switch {
	case ct == ContentTypeOpenMetrics && !hasEOFLine(b) && strings.Contains(err.Error(), "# EOF"):
		// Said OpenMetrics by its Content-Type, a page without # EOF is cut
		// short, or a text-format page under the wrong header.
		return fmt.Errorf("%w (the Content-Type %q says OpenMetrics, whose pages end with a # EOF line: the page was cut short, or is the text format sent as OpenMetrics)", err, contentType)
	case bytes.HasPrefix(b, []byte("\ufeff")):
		return fmt.Errorf("%w (the page starts with a UTF-8 byte-order mark, which the format does not allow: save the page without it)", err)
	case bytes.Contains(b, []byte("\r\n")):
		return fmt.Errorf("%w (the page has CRLF line endings; the format ends lines with \\n only: convert them (dos2unix FILE), or fix the server or proxy that sent them)", err)
	case errors.As(err, &ne):
		// Prometheus's parser passes strconv's error up as it is.
		_, where, _ := strings.Cut(err.Error(), " while parsing: ")
		if where != "" {
			where = " in " + where
		}
		if ne.Func != "ParseFloat" { // the parser reads timestamps with ParseInt
			return fmt.Errorf("timestamp %q is not an int64 of milliseconds%s", ne.Num, where)
		}
		if errors.Is(ne.Err, strconv.ErrRange) {
			return fmt.Errorf("sample value %q is out of a float64's range%s (at most about 1.8e308)", ne.Num, where)
		}
		if n := strings.ToLower(ne.Num); n == "-nan" || n == "+nan" {
			// C's printf of a NaN whose sign bit is set; llama.cpp
			// servers of early 2025 wrote it before their first request
			// (llama.cpp issue #11868, fixed by PR #11915).
			return fmt.Errorf("sample value %q is C's printf of a NaN%s, which the text format spells NaN (Prometheus refuses the page too): a server bug, e.g. llama.cpp's before its first request in early-2025 builds; upgrade the server", ne.Num, where)
		}
		return fmt.Errorf("sample value %q is not a number%s: a sample line is NAME{LABELS} VALUE; is this a model server's /metrics page?", ne.Num, where)
	case errors.As(err, &oe) && oe.off < 0:
		// Nothing parsed before the error: a body that is not a page
		// at all (a proxy's "Unauthorized", "404 page not found").
		first, _, _ := bytes.Cut(bytes.TrimLeft(b, " \t\n"), []byte("\n"))
		if len(first) > 60 {
			first = append(first[:60:60], "..."...)
		}
		return fmt.Errorf("%w (nothing before it reads as metrics; the body starts %q: is the URL a model server's /metrics, not an error or login page?)", err, first)
	}
	return err
}

// openMetricsSyntax names the OpenMetrics-only syntax a sample line
// carries, "" when none: an exemplar after the value (` # {...}`), or a
// timestamp with a fraction or exponent (OpenMetrics writes seconds, the
// text format integer milliseconds).
func openMetricsSyntax(line []byte) string {
	l := strings.TrimSpace(string(line))
	if l == "" || l[0] == '#' {
		return ""
	}
	if strings.Contains(l, " # {") {
		return "an exemplar (` # {...}` after the value)"
	}
	rest := l
	if i := strings.LastIndexByte(l, '}'); i >= 0 {
		rest = l[i+1:]
	} else if i := strings.IndexAny(l, " \t"); i >= 0 {
		rest = l[i:]
	}
	if f := strings.Fields(rest); len(f) == 2 && strings.ContainsAny(f[1], ".eE") {
		if _, err := strconv.ParseFloat(f[1], 64); err == nil {
			return fmt.Sprintf("the timestamp %s, in seconds as OpenMetrics writes them (the text format's are integer milliseconds)", f[1])
		}
	}
	return ""
}

// lineText is the text of the 1-based line n of b (without its newline),
// nil when b has no such line.
func lineText(b []byte, n int) []byte {
	for i := 1; len(b) > 0; i++ {
		l, rest, _ := bytes.Cut(b, []byte("\n"))
		if i == n {
			return l
		}
		b = rest
	}
	return nil
}

// mediaType picks the parser's content type: from the header when given
// (text/plain or application/openmetrics-text; anything else is refused),
// else by sniffing. Bodies that are JSON or HTML are refused with a hint.
func mediaType(b []byte, contentType string) (string, error) {
	trimmed := bytes.TrimLeft(b, " \t\r\n\ufeff")
	if len(trimmed) > 0 {
		switch {
		case trimmed[0] == '[' || trimmed[0] == '{' && !quotedName(trimmed):
			return "", errors.New("body is JSON, not Prometheus text (trtllm-serve serves JSON at /metrics and Prometheus text at /prometheus/metrics)")
		case trimmed[0] == '<':
			return "", errors.New("body is HTML/XML, not Prometheus text (wrong URL or path?)")
		}
	}
	if contentType != "" {
		mt, params, err := mime.ParseMediaType(contentType)
		if err != nil {
			return "", headerError{fmt.Errorf("cannot parse Content-Type %q: %v", contentType, err)}
		}
		switch mt {
		case "text/plain":
			return ContentTypeText, nil
		case "application/openmetrics-text":
			if v := params["version"]; v != "" && !strings.HasPrefix(v, "1.") && v != "0.0.1" {
				return "", headerError{fmt.Errorf("unsupported OpenMetrics version %q (allowed: 1.0.0)", v)}
			}
			return ContentTypeOpenMetrics, nil
		case "application/vnd.google.protobuf":
			return "", headerError{fmt.Errorf("unsupported Content-Type %q (allowed: text/plain, application/openmetrics-text): the protobuf format, which infscale does not read (it asks for text)", contentType)}
		default:
			return "", headerError{fmt.Errorf("unsupported Content-Type %q (allowed: text/plain, application/openmetrics-text; Prometheus 3 refuses it too, unless its scrape config sets fallback_scrape_protocol): the server or a proxy in between sets it; a page saved to a file is read as text", contentType)}
		}
	}
	if hasEOFLine(b) {
		return ContentTypeOpenMetrics, nil
	}
	return ContentTypeText, nil
}

// headerError is mediaType's complaint about the HTTP Content-Type, which
// is no line of the body.
type headerError struct{ error }

// quotedName reports whether b, which starts with '{', starts as a sample
// line whose metric name is quoted (a UTF-8 name: Prometheus 3's parsers
// read it, client_golang writes it under escaping=allow-utf-8):
// {"name"} or {"name",label=...}, not a JSON object ({"key": ...} or {}).
func quotedName(b []byte) bool {
	rest := bytes.TrimLeft(b[1:], " \t")
	if len(rest) == 0 || rest[0] != '"' {
		return false
	}
	for i := 1; i < len(rest); i++ {
		switch rest[i] {
		case '\\':
			i++
		case '\n':
			return false
		case '"':
			after := bytes.TrimLeft(rest[i+1:], " \t")
			return len(after) > 0 && (after[0] == ',' || after[0] == '}')
		}
	}
	return false
}

func hasEOFLine(b []byte) bool {
	for _, line := range bytes.Split(b, []byte("\n")) {
		if string(bytes.TrimRight(line, "\r")) == "# EOF" {
			return true
		}
	}
	return false
}

// rawPage is what the parser saw, before reduction to signals.
type rawPage struct {
	samples  []Sample
	offsets  []int // byte offset of each sample's line in the page, -1 unknown
	byName   map[string][]int
	family   map[string]string // sample name -> family name
	declared map[string]bool
	types    map[string]model.MetricType // family name -> # TYPE
}

// typeOf is the # TYPE the page declares for name, a sample or family
// name ("" when undeclared): the type of its family (familyOf), else its
// own.
func (r *rawPage) typeOf(name string) model.MetricType {
	if f, ok := r.family[name]; ok {
		if t, ok := r.types[f]; ok {
			return t
		}
	}
	return r.types[name]
}

// has reports whether name is declared or has samples.
func (r *rawPage) has(name string) bool {
	return r.declared[name] || len(r.byName[name]) > 0
}

// hasFinite reports whether name has a finite sample.
func (r *rawPage) hasFinite(name string) bool {
	for _, j := range r.byName[name] {
		if finite(r.samples[j].Value) {
			return true
		}
	}
	return false
}

// parse runs textparse over the whole page; any error fails the page.
func parse(b []byte, ct string) (*rawPage, error) {
	p, err := textparse.New(b, ct, labels.NewSymbolTable(), textparse.ParserOptions{OpenMetricsSkipSTSeries: true})
	if p == nil {
		return nil, err
	}
	raw := &rawPage{byName: map[string][]int{}, family: map[string]string{}, declared: map[string]bool{}, types: map[string]model.MetricType{}}
	types := raw.types
	seen := newSeriesSet()
	var lset labels.Labels
	last := -1 // offset of the last entry read
	for {
		et, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, &offsetError{off: last, err: err}
		}
		switch et {
		case textparse.EntryType:
			name, typ := p.Type()
			last = max(last, offsetIn(b, name))
			raw.declared[string(name)] = true
			types[string(name)] = typ
		case textparse.EntryHelp:
			name, _ := p.Help()
			last = max(last, offsetIn(b, name))
			raw.declared[string(name)] = true
		case textparse.EntryUnit:
			name, _ := p.Unit()
			last = max(last, offsetIn(b, name))
			raw.declared[string(name)] = true
		case textparse.EntrySeries:
			series, _, v := p.Series()
			off := offsetIn(b, series)
			last = max(last, off)
			p.Labels(&lset)
			name := lset.Get(labels.MetricName)
			if err := seen.add(lset, v, len(raw.samples), raw.samples); err != nil {
				return nil, &offsetError{off: off, exact: off >= 0, err: err}
			}
			if _, ok := raw.family[name]; !ok {
				raw.family[name] = familyOf(name, types)
			}
			raw.byName[name] = append(raw.byName[name], len(raw.samples))
			raw.samples = append(raw.samples, Sample{Name: name, Labels: lset, Value: v})
			raw.offsets = append(raw.offsets, off)
		}
	}
	return raw, nil
}

// offsetError is a parse error with where it is known to be: exactly at
// byte off (exact), or after the entry at off (the last one read; -1 when
// none was).
type offsetError struct {
	off   int
	exact bool
	err   error
}

func (e *offsetError) Error() string { return e.err.Error() }
func (e *offsetError) Unwrap() error { return e.err }

// offsetIn is the byte offset of sub in b when sub is a subslice of b (the
// parser returns names and series as slices of its input), else -1.
func offsetIn(b, sub []byte) int {
	if len(sub) == 0 || len(b) == 0 {
		return -1
	}
	i := cap(b) - cap(sub)
	if i < 0 || i >= len(b) || &b[i] != &sub[0] {
		return -1
	}
	return i
}

// lineAt is the 1-based line of byte offset off.
func lineAt(b []byte, off int) int { return 1 + bytes.Count(b[:off], []byte("\n")) }

// maxScan bounds the lines locate tries one by one after the last good
// entry before it falls back to errorLine's binary search.
const maxScan = 1000

// locate finds the line of parse's error. A duplicate series knows its
// offset. Otherwise the error is after the last entry read; in the text
// format every line parses on its own, so the first following line that
// fails alone is the one (this keeps a 45 MB page's error line to one
// parse instead of twenty). Else, and for OpenMetrics (whose lines depend
// on the page around them), errorLine's binary search over prefixes.
func locate(b []byte, ct string, err error) int {
	var oe *offsetError
	if !errors.As(err, &oe) {
		return errorLine(b, ct)
	}
	if oe.exact {
		return lineAt(b, oe.off)
	}
	if ct != ContentTypeText {
		return errorLine(b, ct)
	}
	start, line := 0, 1
	if oe.off >= 0 {
		line = lineAt(b, oe.off)
		start = bytes.LastIndexByte(b[:oe.off], '\n') + 1 // the start of that line
	}
	rest := b[start:]
	for n := 0; n < maxScan && len(rest) > 0; n++ {
		end := bytes.IndexByte(rest, '\n') + 1
		if end == 0 {
			end = len(rest)
		}
		if _, err := parse(rest[:end:end], ct); err != nil {
			return line
		}
		rest, line = rest[end:], line+1
	}
	return errorLine(b, ct)
}

// familyOf maps a sample name to its family: the _bucket/_sum/_count (and
// OpenMetrics _total, _created, _gcount, _gsum) samples of a declared
// histogram, summary or counter belong to the declared base name; anything
// else is its own family.
func familyOf(name string, types map[string]model.MetricType) string {
	for _, suf := range []string{"_bucket", "_sum", "_count", "_total", "_created", "_gcount", "_gsum", "_info"} {
		base, ok := strings.CutSuffix(name, suf)
		if !ok {
			continue
		}
		if t, declared := types[base]; declared && t != model.MetricTypeGauge && t != model.MetricTypeUnknown {
			return base
		}
	}
	return name
}

// errorLine finds the 1-based line of the first parse error by parsing
// growing prefixes of whole lines (binary search: a prefix of a valid
// text-format page is valid). OpenMetrics prefixes get a `# EOF` appended.
// It returns the last line when no prefix fails (e.g. a missing `# EOF`).
func errorLine(b []byte, ct string) int {
	return lineWhere(b, ct, func(_ *rawPage, err error) bool { return err != nil })
}

// sampleLine is the 1-based line of the j-th sample (0-based, page order)
// of a page that parses: the shortest prefix of lines with more than j
// samples.
func sampleLine(b []byte, ct string, j int) int {
	return lineWhere(b, ct, func(raw *rawPage, err error) bool { return err == nil && len(raw.samples) > j })
}

// lineWhere returns the 1-based number of the shortest prefix of whole
// lines for whose parse hit holds (hit must be monotone in the prefix
// length); the last line when none does.
func lineWhere(b []byte, ct string, hit func(*rawPage, error) bool) int {
	lines := bytes.SplitAfter(b, []byte("\n"))
	if n := len(lines); n > 0 && len(lines[n-1]) == 0 {
		lines = lines[:n-1]
	}
	ends := make([]int, len(lines))
	off := 0
	for i, l := range lines {
		off += len(l)
		ends[i] = off
	}
	om := ct == ContentTypeOpenMetrics
	fails := func(k int) bool { // parse of lines[:k] fails
		prefix := b[:ends[k-1]]
		if om && !hasEOFLine(prefix) {
			buf := append(append([]byte{}, prefix...), "\n# EOF\n"...)
			if prefix[len(prefix)-1] == '\n' {
				buf = append(append([]byte{}, prefix...), "# EOF\n"...)
			}
			prefix = buf
		}
		raw, err := parse(prefix, ct)
		return hit(raw, err)
	}
	k := sort.Search(len(lines), func(i int) bool { return fails(i + 1) })
	if k == len(lines) {
		return len(lines)
	}
	return k + 1
}
