package promql

import (
	"io"
	"math/bits"
	"strconv"
	"strings"

	"github.com/prometheus/prometheus/model/labels"

	"github.com/infscale/infscale/pkg/modelserver"
)

// A Plan holds its query texts compactly and writes a batch's text only
// while it is sent: at 10,000 targets a batched query is about 2.6 MiB and a
// cycle sends five or six of them, and the targets' queries of one signal
// differ only in their selectors. Each target's printed query is split into
// a shape, shared by every target whose query differs from it only in the
// selector's matchers (the same text with the marks below where they go),
// and the target's printed matchers.
const (
	selMark = '\x00' // where the target's matchers go (as printed between a selector's braces)
	idMark  = '\x01' // where its matchers on the pod and namespace labels go (liveness series)
)

// queryShape is a query text with selMark and idMark where a target's
// matchers go (none when the text is verbatim: a jobText without a
// selector), as printed (raw) and form-encoded but for the marks (esc).
type queryShape struct {
	raw, esc string
	// segs are raw (segs[0]) and esc (segs[1]) cut at the marks, so that a
	// text is written without looking for them: segs[e][i] comes before
	// marks[i], the last after the last mark. Nil for a verbatim text.
	segs      [2][]string
	marks     []byte
	nSel, nID int // the marks of each kind
}

// selectorText is a target's selector as the printer writes its matchers
// between braces (sel), its matchers on the pod and namespace labels (id),
// and both form-encoded.
type selectorText struct {
	sel, id       string
	selEsc, idEsc string
}

// jobText is one target's query text: shape with the marks replaced by sel's
// texts, or shape.raw verbatim when sel is nil.
type jobText struct {
	shape *queryShape
	sel   *selectorText
}

// newSelectorText prints sel's matchers as the shapes of server's series
// use them (ownSeries) and those on the pod and namespace labels
// (liveIdentity) as the printer writes them in a selector.
func newSelectorText(sel []*labels.Matcher, server modelserver.Server, o Options) *selectorText {
	inner := func(ms []*labels.Matcher) string {
		if len(ms) == 0 {
			return ""
		}
		s := SelectorText(ms) // {a="b",...}
		return strings.TrimSuffix(strings.TrimPrefix(s, "{"), "}")
	}
	st := &selectorText{sel: inner(ownSeries(server, sel)), id: inner(liveIdentity(sel, o.withDefaults()))}
	st.selEsc, st.idEsc = appendForm(nil, st.sel), appendForm(nil, st.id)
	return st
}

// shapeSet interns queryShapes by raw text while a Plan is built.
type shapeSet map[shapeKey]*queryShape

// shapeKey tells verbatim texts (marked false) from shapes.
type shapeKey struct {
	raw    string
	marked bool
}

// compact returns text as a jobText: its occurrences of st's matchers
// replaced by marks, the shape shared with every earlier text of the same
// shape (st nil, or a text or selector that holds a mark byte: the text
// verbatim). Replacing the matchers by marks, then the marks by the same
// matchers, gives text back exactly: text holds no mark byte, and neither
// does what replaces them.
func (ss shapeSet) compact(text string, st *selectorText) jobText {
	hasMark := func(s string) bool { return strings.ContainsAny(s, "\x00\x01") }
	if st == nil || st.sel == "" || hasMark(text) || hasMark(st.sel) || hasMark(st.id) {
		return jobText{shape: newShape(text, nil)}
	}
	raw := strings.ReplaceAll(text, st.sel, string(rune(selMark)))
	if st.id != "" {
		raw = strings.ReplaceAll(raw, st.id, string(rune(idMark)))
	}
	if raw == text { // nothing of the selector in it: verbatim
		return jobText{shape: ss.intern(text, nil)}
	}
	return jobText{shape: ss.intern(raw, st), sel: st}
}

func (ss shapeSet) intern(raw string, st *selectorText) *queryShape {
	key := shapeKey{raw, st != nil}
	if sh, ok := ss[key]; ok {
		return sh
	}
	sh := newShape(raw, st)
	ss[key] = sh
	return sh
}

// newShape is the queryShape of raw (marks counted only with a selector).
func newShape(raw string, st *selectorText) *queryShape {
	sh := &queryShape{raw: raw}
	if st == nil {
		sh.esc = appendForm(nil, raw)
		return sh
	}
	var esc []byte
	var cuts []int // in esc, where each segment ends
	for s := raw; ; {
		i := strings.IndexAny(s, "\x00\x01")
		if i < 0 {
			esc = appendFormBytes(esc, s)
			sh.segs[0] = append(sh.segs[0], s)
			break
		}
		sh.segs[0] = append(sh.segs[0], s[:i])
		esc = appendFormBytes(esc, s[:i])
		cuts = append(cuts, len(esc))
		esc = append(esc, s[i])
		sh.marks = append(sh.marks, s[i])
		if s[i] == selMark {
			sh.nSel++
		} else {
			sh.nID++
		}
		s = s[i+1:]
	}
	sh.esc = string(esc)
	from := 0
	for _, c := range cuts {
		sh.segs[1] = append(sh.segs[1], sh.esc[from:c])
		from = c + 1 // past the mark
	}
	sh.segs[1] = append(sh.segs[1], sh.esc[from:])
	return sh
}

// verbatim is the jobText of a text held as it is (not shared).
func verbatim(text string) jobText { return jobText{shape: newShape(text, nil)} }

// rawLen is the length of the text.
func (t jobText) rawLen() int {
	if t.sel == nil {
		return len(t.shape.raw)
	}
	return len(t.shape.raw) - t.shape.nSel - t.shape.nID + t.shape.nSel*len(t.sel.sel) + t.shape.nID*len(t.sel.id)
}

// String returns the text.
func (t jobText) String() string {
	if t.sel == nil {
		return t.shape.raw
	}
	return string(t.appendTo(make([]byte, 0, t.rawLen()), false))
}

// appendTo appends the text, form-encoded when esc.
func (t jobText) appendTo(dst []byte, esc bool) []byte {
	if t.sel == nil {
		if esc {
			return append(dst, t.shape.esc...)
		}
		return append(dst, t.shape.raw...)
	}
	e, sel, id := 0, t.sel.sel, t.sel.id
	if esc {
		e, sel, id = 1, t.sel.selEsc, t.sel.idEsc
	}
	segs := t.shape.segs[e]
	for i, m := range t.shape.marks {
		dst = append(dst, segs[i]...)
		if m == selMark {
			dst = append(dst, sel...)
		} else {
			dst = append(dst, id...)
		}
	}
	return append(dst, segs[len(segs)-1]...)
}

// queryText is a query's text, written part by part (a batch of 10,000
// targets' queries is never held whole on the hot path).
type queryText interface {
	// parts is the number of parts; appendPart appends part i, form-encoded when esc.
	parts() int
	appendPart(dst []byte, i int, esc bool) []byte
	// short is what a QueryError about the query keeps as its Query: the
	// text, or for a batch its first errQueryLen bytes (QueryError.Error
	// prints at most 200 of them).
	short() string
}

// plainText is a query text held whole.
type plainText string

func (q plainText) parts() int { return 1 }
func (q plainText) appendPart(dst []byte, _ int, esc bool) []byte {
	if esc {
		return appendFormBytes(dst, string(q))
	}
	return append(dst, q...)
}
func (q plainText) short() string { return string(q) }

// errQueryLen is how much of a batch's text its errors keep: one byte more
// than QueryError.Error prints, so that it still ends the text with "...".
const errQueryLen = 201

// batchText is the text of a batch of several jobs: `label_replace(<q0>,
// "infscale_target", "0", "", "") or label_replace(<q1>, "infscale_target",
// "1", "", "") or ...`, a scalar query wrapped in vector() first, each <qk>
// jobs[k]'s text (the PromQL printer's), the or's nested as a balanced tree:
// `(b0 or b1) or (b2 or b3)` (batchParens). or is associative (the leftmost
// operand with a label set wins either way, and every branch has its own
// infscale_target), so the tree has the chain's series; but Prometheus's
// engine walks a query with the path of nodes above each node, so a
// 10,000-deep chain took it about 20 s and gigabytes to evaluate with no
// series at all, the tree (14 deep) under 1 s (docs/promql.md). The
// wrapping and the joining are written here because printing the batch
// node by node copies a side at every level; the text is the one
// orTree(batchBranches(jobs)).String() prints (label_replace's arguments
// are printed joined by ", "): TestGoldenBatch. Part k is branch k with the
// " or " and the parentheses before it, and the parentheses after it.
type batchText struct {
	jobs []job
	head string // the text's first errQueryLen bytes; "" until set (newBatchText)
}

func newBatchText(jobs []job) batchText {
	b := batchText{jobs: jobs}
	var h []byte
	for k := 0; k < len(jobs) && len(h) < errQueryLen; k++ {
		h = b.appendPart(h, k, false)
	}
	b.head = string(h[:min(len(h), errQueryLen)])
	return b
}

func (b batchText) parts() int    { return len(b.jobs) }
func (b batchText) short() string { return b.head }

// The wrapping of a batch's branches, as written (0) and form-encoded (1).
var (
	batchOr       = [2]string{" or ", appendForm(nil, " or ")}
	batchOpen     = [2]string{"label_replace(", appendForm(nil, "label_replace(")}
	batchVector   = [2]string{"vector(", appendForm(nil, "vector(")}
	batchTagOpen  = [2]string{`, "` + TargetLabel + `", "`, appendForm(nil, `, "`+TargetLabel+`", "`)}
	batchTagClose = [2]string{`", "", "")`, appendForm(nil, `", "", "")`)}
)

// batchWrap is the bytes batchText adds around one target's query at most
// in a batch of n: " or label_replace(vector(", `), "infscale_target", "`,
// the index and `", "", "")`, and the tree's parentheses (batchParens).
func batchWrap(n int) int { return 64 + 2*bits.Len(uint(n)) }

func (b batchText) appendPart(dst []byte, k int, esc bool) []byte {
	e := 0
	if esc {
		e = 1
	}
	j := &b.jobs[k]
	if k > 0 {
		dst = append(dst, batchOr[e]...)
	}
	opens, closes := batchParens(k, len(b.jobs))
	for range opens {
		dst = append(dst, '(')
	}
	dst = append(dst, batchOpen[e]...)
	if j.scalar {
		dst = append(dst, batchVector[e]...)
	}
	dst = j.text.appendTo(dst, esc)
	if j.scalar {
		dst = append(dst, ')')
	}
	dst = append(dst, batchTagOpen[e]...)
	dst = strconv.AppendInt(dst, int64(k), 10)
	dst = append(dst, batchTagClose[e]...)
	for range closes {
		dst = append(dst, ')')
	}
	return dst
}

// batchParens is how many parentheses open before branch k of n, and close
// after it, in the balanced or-tree: [lo, hi) splits at (lo+hi)/2, and
// each side of more than one branch is parenthesised (the whole is not).
// Each is at most the tree's depth, bits.Len(n).
func batchParens(k, n int) (opens, closes int) {
	lo, hi := 0, n
	for root := true; hi-lo > 1; root = false {
		if !root {
			if lo == k {
				opens++
			}
			if hi-1 == k {
				closes++
			}
		}
		if m := (lo + hi) / 2; k < m {
			hi = m
		} else {
			lo = m
		}
	}
	return opens, closes
}

// textString returns q's whole text (the GET retry, an API without the
// batched path: rare).
func textString(q queryText) string {
	if p, ok := q.(plainText); ok {
		return string(p)
	}
	var b []byte
	for i := range q.parts() {
		b = q.appendPart(b, i, false)
	}
	return string(b)
}

// formLenOf is the length of q's text form-encoded (the POST's
// Content-Length without "query=" and the other parameters).
func formLenOf(q queryText) int {
	if p, ok := q.(plainText); ok {
		return formEscapedLen(string(p))
	}
	n := 0
	var buf []byte
	for i := range q.parts() {
		buf = q.appendPart(buf[:0], i, true)
		n += len(buf)
	}
	return n
}

// formBody returns a function (usable as http.Request.GetBody) opening the
// body "query=<q, form-encoded>" + tail, written part by part while it is
// read.
func newFormBody(q queryText, tail string) func() (io.ReadCloser, error) {
	return func() (io.ReadCloser, error) {
		return &formReader{q: q, tail: tail, pending: append(make([]byte, 0, 1024), "query="...)}, nil
	}
}

// formReader reads "query=" (already in pending), q's parts form-encoded,
// then tail. Any buffer size works: a part is written whole into pending
// and read from there.
type formReader struct {
	q       queryText
	tail    string
	next    int // the next part to write; q.parts() for the tail, more when done
	pending []byte
	off     int // read so far of pending
}

func (r *formReader) Read(p []byte) (int, error) {
	n := 0
	for n < len(p) {
		if r.off == len(r.pending) {
			switch parts := r.q.parts(); {
			case r.next < parts:
				r.pending = r.q.appendPart(r.pending[:0], r.next, true)
			case r.next == parts:
				r.pending = append(r.pending[:0], r.tail...)
			default:
				if n == 0 {
					return 0, io.EOF
				}
				return n, nil
			}
			r.next++
			r.off = 0
			continue
		}
		c := copy(p[n:], r.pending[r.off:])
		n += c
		r.off += c
	}
	return n, nil
}

func (r *formReader) Close() error { return nil }

// formByte is what a byte is written as in an
// application/x-www-form-urlencoded value when it is written as one byte
// (itself; '+' for a space), 0 when it is written %XX: '%', '+', '&', ';',
// '=', '#', control bytes and non-ASCII bytes. Other printable ASCII bytes
// (PromQL's quotes, braces, parentheses) are sent as they are, which every
// form decoder (Go's url.ParseQuery, used by Prometheus, among them) reads
// back unchanged; the body stays about the size of the query, where
// url.QueryEscape would make it ~1.4 times larger. A table, as the batched
// bodies are megabytes.
var formByte = func() (t [256]byte) {
	for c := '!'; c < 0x7f; c++ {
		if !strings.ContainsRune("%+&;=#", c) {
			t[c] = byte(c)
		}
	}
	t[' '] = '+'
	return t
}()

// formEscapedLen is the length of s form-encoded (appendFormBytes).
func formEscapedLen(s string) int {
	n := 0
	for i := 0; i < len(s); i++ {
		if formByte[s[i]] != 0 {
			n++
		} else {
			n += 3
		}
	}
	return n
}

// appendFormBytes appends s form-encoded (formByte).
func appendFormBytes(dst []byte, s string) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(s); i++ {
		c := s[i]
		if o := formByte[c]; o != 0 {
			dst = append(dst, o)
			continue
		}
		dst = append(dst, '%', hex[c>>4], hex[c&15])
	}
	return dst
}

// appendForm is appendFormBytes as a string.
func appendForm(dst []byte, s string) string { return string(appendFormBytes(dst, s)) }
