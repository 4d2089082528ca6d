// Package jsonpos locates the parts of a JSON document for error messages:
// where each key and value starts (as a byte offset, and as line:column),
// and which keys a Go struct's json tags do not name. encoding/json reports
// an unknown field or a value that fails validation without a position.
package jsonpos

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strconv"
	"strings"
)

// Pos is where one member of a document starts: Key is the byte offset of
// an object member's key (its opening quote; the value's for an array
// element or the root), Value that of its value.
type Pos struct{ Key, Value int64 }

// Index is every key and array element of one JSON document, by path
// (e.g. fit[2].step_s; "" is the root), in document order.
type Index struct {
	data  []byte
	pos   map[string]Pos
	order []string
	dups  []Duplicate
}

// Duplicate is an object key given twice in one object (encoding/json,
// like Python's json, keeps the last value silently): Path is its path,
// First and Second where each starts.
type Duplicate struct {
	Path          string
	First, Second Pos
}

// Duplicates lists, in document order, every key given again in the
// object that already has it (a third copy too, against the first).
func (ix *Index) Duplicates() []Duplicate { return ix.dups }

// New walks data (one JSON value) and indexes it. Errors: encoding/json's
// (*json.SyntaxError for malformed JSON, its Offset that of the offending
// byte in data; io.ErrUnexpectedEOF or io.EOF for a truncated or empty
// one), *TrailingError.
func New(data []byte) (*Index, error) {
	ix := &Index{data: data, pos: map[string]Pos{}}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := ix.walk(dec, "", -1); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			se.Offset = SyntaxOffset(data, se)
		}
		return ix, err
	}
	if off := ix.start(dec); off < int64(len(data)) {
		return ix, &TrailingError{Offset: off}
	}
	return ix, nil
}

// SyntaxOffset is the offset in data of the byte se is about. A
// Decoder's Token counts a bad value's offset from where that value's read
// began (an "x" after "kind": on line 2 was put on line 1), so the
// document is scanned whole again, as json.Unmarshal does, whose Offset is
// just past the offending byte; se.Offset when that scan does not fail
// alike.
func SyntaxOffset(data []byte, se *json.SyntaxError) int64 {
	var raw json.RawMessage
	var whole *json.SyntaxError
	if err := json.Unmarshal(data, &raw); errors.As(err, &whole) && whole.Offset > 0 && whole.Error() == se.Error() {
		return whole.Offset - 1
	}
	return se.Offset
}

// Locate is where in data a decoding error of it is, and the error to say
// there: a syntax error's byte (SyntaxOffset), a type error's value, and
// the end of a document cut short (an unexpected end, from Unmarshal or a
// Decoder), said as such; -1 and err when err names no place in data.
func Locate(data []byte, err error) (int64, error) {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se) && se.Offset >= int64(len(data)),
		errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return int64(len(data)), errors.New("unexpected end of the JSON (truncated file?)")
	case errors.As(err, &se):
		return SyntaxOffset(data, se), err
	case errors.As(err, &te):
		return te.Offset, err
	}
	return -1, err
}

// TrailingError is data after the document's one value.
type TrailingError struct{ Offset int64 }

func (e *TrailingError) Error() string { return "data after the JSON value (want one value)" }

// start is the offset of the decoder's next token (past whitespace, ','
// and ':').
func (ix *Index) start(dec *json.Decoder) int64 {
	off := dec.InputOffset()
	for off < int64(len(ix.data)) && strings.IndexByte(" \t\r\n,:", ix.data[off]) >= 0 {
		off++
	}
	return off
}

func (ix *Index) walk(dec *json.Decoder, path string, keyOff int64) error {
	off := ix.start(dec)
	if keyOff < 0 {
		keyOff = off
	}
	if _, dup := ix.pos[path]; !dup {
		ix.order = append(ix.order, path)
	}
	ix.pos[path] = Pos{Key: keyOff, Value: off}
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]Pos{} // this object's keys (a path may hold dots)
		for dec.More() {
			koff := ix.start(dec)
			k, err := dec.Token()
			if err != nil {
				return err
			}
			kpath := k.(string)
			if path != "" {
				kpath = path + "." + kpath
			}
			first, dup := seen[k.(string)]
			if err := ix.walk(dec, kpath, koff); err != nil {
				return err
			}
			if dup {
				ix.dups = append(ix.dups, Duplicate{Path: kpath, First: first, Second: ix.pos[kpath]})
			} else {
				seen[k.(string)] = ix.pos[kpath]
			}
		}
		_, err = dec.Token()
	case json.Delim('['):
		for i := 0; dec.More(); i++ {
			if err := ix.walk(dec, path+"["+strconv.Itoa(i)+"]", -1); err != nil {
				return err
			}
		}
		_, err = dec.Token()
	}
	return err
}

// Lookup is where path starts; for a path not in the document, that of its
// nearest ancestor that is (the root's when none).
func (ix *Index) Lookup(path string) Pos {
	if p, ok := Nearest(path, func(p string) bool { _, ok := ix.pos[p]; return ok }); ok {
		return ix.pos[p]
	}
	return ix.pos[""]
}

// Nearest is path, or its nearest ancestor (fit[2].step_s, fit[2], fit),
// for which has is true; false when none is.
func Nearest(path string, has func(string) bool) (string, bool) {
	for {
		if has(path) {
			return path, true
		}
		i := strings.LastIndexAny(path, ".[")
		if i < 0 {
			return "", false
		}
		path = path[:i]
	}
}

// LineCol converts a byte offset of the document into a 1-based line and
// column (columns count bytes).
func (ix *Index) LineCol(off int64) (line, col int) { return LineCol(ix.data, off) }

// LineCol converts a byte offset of data into a 1-based line and column
// (columns count bytes); offsets past the end are the end.
func LineCol(data []byte, off int64) (line, col int) {
	off = min(max(off, 0), int64(len(data)))
	line, col = 1, 1
	for _, b := range data[:off] {
		if b == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}

// Unknown is a key of the document its Go type has no field for.
type Unknown struct {
	Path    string   // e.g. fit[0].stepS
	Key     string   // the key as written
	Allowed []string // the json names the enclosing struct takes
}

// UnknownKeys lists, in document order, the object keys that t (a struct
// type; nested structs, slices and pointers followed by their json tags)
// has no field for, matching names exactly (encoding/json's case folding
// would accept "MFU" for "mfu"). Members below an unknown key are not
// reported again.
func (ix *Index) UnknownKeys(t reflect.Type) []Unknown {
	var out []Unknown
	types := map[string]reflect.Type{"": t}
	for _, p := range ix.order {
		if p == "" {
			continue
		}
		parent, key, isKey := split(p)
		pt, ok := types[parent]
		if !ok {
			continue // below an unknown key or a non-struct value
		}
		for pt.Kind() == reflect.Pointer {
			pt = pt.Elem()
		}
		if !isKey {
			if pt.Kind() == reflect.Slice || pt.Kind() == reflect.Array {
				types[p] = pt.Elem()
			}
			continue
		}
		if pt.Kind() != reflect.Struct {
			continue
		}
		if f, ok := Field(pt, key); ok {
			types[p] = f.Type
		} else {
			out = append(out, Unknown{Path: p, Key: key, Allowed: Keys(pt)})
		}
	}
	return out
}

// split cuts a path into its parent and last step: a key (isKey) or an
// array index.
func split(p string) (parent, last string, isKey bool) {
	if strings.HasSuffix(p, "]") {
		i := strings.LastIndexByte(p, '[')
		return p[:i], p[i+1 : len(p)-1], false
	}
	i := strings.LastIndexByte(p, '.')
	if i < 0 {
		return "", p, true
	}
	return p[:i], p[i+1:], true
}

// Field is the exported field of struct type t whose json name is exactly
// key.
func Field(t reflect.Type, key string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		if n, _, _ := strings.Cut(f.Tag.Get("json"), ","); f.IsExported() && n == key {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// Keys is the json names of struct type t's exported, tagged fields, in
// field order.
func Keys(t reflect.Type) []string {
	var keys []string
	for i := range t.NumField() {
		if n, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ","); t.Field(i).IsExported() && n != "" && n != "-" {
			keys = append(keys, n)
		}
	}
	return keys
}
