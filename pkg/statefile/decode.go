package statefile

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/infscale/infscale/internal/jsonpos"
	"github.com/infscale/infscale/pkg/recommend"
)

// Decode reads a state file from data (its content; name is used in
// errors) strictly: unknown keys, a key given twice (encoding/json would
// keep the last one silently), wrong types, a time that is not RFC3339 and
// values infscale never writes (File's bounds, recommend.State.Validate) are
// errors, each "NAME: line L:C: FIELD: what is wrong (what is allowed)",
// FIELD a JSON path such as state.recommendations[2].replicas. Every
// problem is reported (errors.Join) except after a syntax error, which
// stops the reading. A document without "version" is the bare
// recommend.State that decide --state wrote before the envelope (Version 0:
// Desired is its last_desired, Current -1, SavedAt its last_at).
func Decode(data []byte, name string) (*File, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, fmt.Errorf("%s: empty (want a JSON object as infscale writes it)", name)
	}
	bare := !topLevelKey(data, "version")
	typ, prefix := reflect.TypeFor[File](), "state."
	if bare {
		typ, prefix = reflect.TypeFor[recommend.State](), ""
	}
	w, err := walk(data, typ, false)
	if err != nil {
		w, err = walk(data, typ, true) // again, for the error's path
		return nil, w.located(name, err)
	}
	if off := w.start(); off < int64(len(data)) {
		return nil, w.located(name, &fieldError{off: off, msg: "data after the JSON object (want one object)"})
	}
	if v, ok := newerVersion(data, bare); ok {
		// Its other keys would be reported as unknown: the version says why.
		// Starting fresh is the caller's to say (decide: delete the file;
		// serve starts fresh on its own).
		return nil, w.located(name, &fieldError{path: "version", off: -1,
			msg: fmt.Sprintf("%d: written by a newer infscale (this one reads version %d): run the infscale that wrote it", v, Version)})
	}
	if len(w.errs) > 0 {
		w, _ = walk(data, typ, true) // again, for the errors' paths
		return nil, w.located(name, w.errs...)
	}
	f := &File{}
	target := any(f)
	if bare {
		target = &f.State
	}
	// The walk refused unknown keys and data after the object; Unmarshal
	// reads data in place (a Decoder would buffer a second copy of it).
	if err := json.Unmarshal(data, target); err != nil { // the walk should have caught it
		return nil, w.located(name, err)
	}
	if bare {
		f.Desired, f.Current, f.SavedAt = f.State.LastDesired, -1, f.State.LastAt
	}
	var errs []error
	if !bare {
		errs = f.validate(w.pos)
	}
	var fes recommend.FieldErrors
	if errors.As(f.State.Validate(), &fes) {
		for _, fe := range fes {
			errs = append(errs, &fieldError{path: prefix + fe.Path, off: -1, msg: fe.Msg})
		}
	}
	if len(errs) > 0 {
		// The values' positions, for the errors' line:column: a second
		// walk recording every path (the first records the top level's).
		w, _ = walk(data, typ, true) // it read once already
		return nil, w.located(name, errs...)
	}
	return f, nil
}

// validate checks the envelope: version, desired and current bounds, and
// that state is there (present: the walker's positions).
func (f *File) validate(present map[string]int64) []error {
	var errs []error
	bad := func(path, format string, args ...any) {
		errs = append(errs, &fieldError{path: path, off: -1, msg: fmt.Sprintf(format, args...)})
	}
	if f.Version != Version {
		bad("version", "unknown version %d (want %d)", f.Version, Version)
	}
	if _, ok := present["desired"]; !ok {
		bad("", "no \"desired\" (want the last desired replicas, 0..%d)", MaxReplicas)
	} else if f.Desired < 0 || f.Desired > MaxReplicas {
		bad("desired", "%d: want 0..%d", f.Desired, MaxReplicas)
	}
	if _, ok := present["current"]; !ok {
		f.Current = -1
	} else if f.Current < -1 || f.Current > MaxReplicas {
		bad("current", "%d: want -1 (unknown) or 0..%d", f.Current, MaxReplicas)
	}
	if _, ok := present["state"]; !ok {
		bad("", "no \"state\" object")
	}
	return errs
}

// topLevelKey reports whether data is a JSON object with key at its top
// level (false for anything else: the strict walk then says what is wrong).
func topLevelKey(data []byte, key string) bool {
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return false
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			return false
		}
		if k == key {
			return true
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return false
		}
	}
	return false
}

// fieldError is a problem at a JSON path (or, for a syntax error, an offset).
type fieldError struct {
	path string
	off  int64 // -1: look up path
	msg  string
}

func (e *fieldError) Error() string {
	if e.path == "" {
		return e.msg
	}
	return e.path + ": " + e.msg
}

// stateWalker walks the JSON tokens alongside the Go type, recording where
// each value starts (for line numbers) and refusing unknown keys, wrong
// types and bad times, which encoding/json reports without a position.
type stateWalker struct {
	data []byte
	dec  *json.Decoder
	pos  map[string]int64 // JSON path → offset of its value
	// all records every path in pos, not only the top level's, and
	// names every value below the top level by its path: a map entry per
	// value took 300 MB for a 15 MiB file, and a path string per value
	// most of the rest, needed only for the errors of one that is
	// refused (walked again with all). Without it they are nested.
	all    bool
	errs   []error                                         // problems that do not stop the walk
	fields map[reflect.Type]map[string]reflect.StructField // jsonpos.Field's, per struct type
}

// nested is the path of every value below the top level in a walk without
// all (it holds '[' so that it is not recorded).
const nested = "[…]"

// key is the path of path's key: the real one with all or at the top
// level, else nested.
func (w *stateWalker) key(path, key string) string {
	switch {
	case path == "":
		return key
	case !w.all:
		return nested
	}
	return path + "." + key
}

// elem is the path of path's element i: the real one with all, else nested.
func (w *stateWalker) elem(path string, i int) string {
	if !w.all {
		return nested
	}
	return path + "[" + strconv.Itoa(i) + "]"
}

// field is jsonpos.Field(t, key), its fields looked up once per type.
func (w *stateWalker) field(t reflect.Type, key string) (reflect.StructField, bool) {
	m, ok := w.fields[t]
	if !ok {
		if t.NumField() > 64 {
			panic("statefile: " + t.String() + " has more fields than value's seen mask holds")
		}
		m = map[string]reflect.StructField{}
		for _, k := range jsonpos.Keys(t) {
			m[k], _ = jsonpos.Field(t, k)
		}
		w.fields[t] = m
	}
	f, ok := m[key]
	return f, ok
}

// walk walks data as a t, recording every path's position with all, else
// the top level's.
func walk(data []byte, t reflect.Type, all bool) (*stateWalker, error) {
	w := &stateWalker{data: data, dec: json.NewDecoder(bytes.NewReader(data)), pos: map[string]int64{}, all: all,
		fields: map[reflect.Type]map[string]reflect.StructField{}}
	w.dec.UseNumber()
	return w, w.value("", t)
}

var timeType = reflect.TypeFor[time.Time]()

// start is the offset of the next token (after whitespace, ',' and ':').
func (w *stateWalker) start() int64 {
	off := w.dec.InputOffset()
	for off < int64(len(w.data)) && strings.IndexByte(" \t\r\n,:", w.data[off]) >= 0 {
		off++
	}
	return off
}

func (w *stateWalker) bad(off int64, path, format string, args ...any) {
	w.errs = append(w.errs, &fieldError{path: path, off: off, msg: fmt.Sprintf(format, args...)})
}

// value reads one value of type t at path; a non-nil error (a syntax error,
// or a value of the wrong shape whose rest cannot be walked) stops the walk.
func (w *stateWalker) value(path string, t reflect.Type) error {
	off := w.start()
	if w.all || !strings.ContainsAny(path, ".[") {
		w.pos[path] = off
	}
	tok, err := w.dec.Token()
	if err != nil {
		// Go's %v prints NaN and ±Inf so, and a hand edit copies it: JSON
		// has no such numbers (encoding/json said "invalid character 'N'").
		for _, lit := range []string{"NaN", "Infinity", "+Infinity", "-Infinity", "+Inf", "-Inf", "Inf"} {
			if bytes.HasPrefix(w.data[off:], []byte(lit)) && path != "" {
				return &fieldError{path: path, off: off, msg: lit + " is not a JSON number (want a finite number)"}
			}
		}
		return err
	}
	name := path
	if name == "" {
		name = "the state"
	}
	if tok == nil { // null: encoding/json leaves the zero value
		return nil
	}
	if t.Kind() == reflect.Pointer { // open_dip: its value walked as the struct
		t = t.Elem()
	}
	switch {
	case t == timeType:
		s, ok := tok.(string)
		var tt time.Time
		if !ok || tt.UnmarshalText([]byte(s)) != nil {
			if d, isDelim := tok.(json.Delim); isDelim {
				return &fieldError{path: path, off: off, msg: fmt.Sprintf("want an RFC3339 time string, got %q", d)}
			}
			w.bad(off, path, "%s is not an RFC3339 time (want e.g. \"2026-11-30T08:00:00Z\")", tokenText(tok))
		}
		return nil
	case t.Kind() == reflect.Struct:
		if tok != json.Delim('{') {
			return w.shape(off, name, tok, "an object")
		}
		var seen uint64 // by field index (State has fewer than 64 fields)
		for w.dec.More() {
			koff := w.start()
			k, err := w.dec.Token()
			if err != nil {
				return err
			}
			key := k.(string)
			f, ok := w.field(t, key)
			kpath := w.key(path, key)
			twice := ok && seen&(1<<f.Index[0]) != 0
			switch {
			case twice: // encoding/json keeps the last one silently ("desired":5,"desired":1 is 1)
				w.bad(koff, kpath, "key given twice; give it once")
			case !ok:
				w.bad(koff, "", "unknown key %q in %s (allowed: %s)", key, name, strings.Join(jsonpos.Keys(t), ", "))
			}
			if twice || !ok {
				var skip json.RawMessage
				if err := w.dec.Decode(&skip); err != nil {
					return err
				}
				continue
			}
			seen |= 1 << f.Index[0]
			if err := w.value(kpath, f.Type); err != nil {
				return err
			}
		}
		_, err := w.dec.Token() // '}'
		return err
	case t.Kind() == reflect.Slice:
		if tok != json.Delim('[') {
			return w.shape(off, name, tok, "an array")
		}
		for i := 0; w.dec.More(); i++ {
			if err := w.value(w.elem(path, i), t.Elem()); err != nil {
				return err
			}
		}
		_, err := w.dec.Token() // ']'
		return err
	}
	n, isNum := tok.(json.Number)
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32:
		if _, err := strconv.ParseInt(string(n), 10, 64); !isNum || err != nil {
			if _, isDelim := tok.(json.Delim); isDelim {
				return w.shape(off, name, tok, "a whole number")
			}
			w.bad(off, path, "%s: want a whole number (replicas)", tokenText(tok))
		}
	case reflect.Float64:
		if !isNum {
			if _, isDelim := tok.(json.Delim); isDelim {
				return w.shape(off, name, tok, "a number")
			}
			w.bad(off, path, "%s: want a number", tokenText(tok))
		} else if _, err := strconv.ParseFloat(string(n), 64); err != nil {
			// 1e400: encoding/json's error named the Go struct, not the field.
			w.bad(off, path, "%s: out of range of a 64-bit float (want a finite number)", n)
		}
	case reflect.Bool:
		if _, ok := tok.(bool); !ok {
			if _, isDelim := tok.(json.Delim); isDelim {
				return w.shape(off, name, tok, "true or false")
			}
			w.bad(off, path, "%s: want true or false", tokenText(tok))
		}
	}
	return nil
}

// shape is the error for a value of the wrong kind (an object where a
// number belongs): it stops the walk, the rest cannot be followed.
func (w *stateWalker) shape(off int64, name string, tok json.Token, want string) error {
	return &fieldError{off: off, msg: fmt.Sprintf("%s: want %s, got %s", name, want, tokenText(tok))}
}

func tokenText(tok json.Token) string {
	switch v := tok.(type) {
	case json.Delim:
		if v == '{' {
			return "an object"
		}
		return "an array"
	case string:
		return strconv.Quote(v)
	case json.Number:
		return string(v)
	}
	return fmt.Sprint(tok)
}

// located prefixes each error with filename and line:column.
func (w *stateWalker) located(filename string, errs ...error) error {
	out := make([]error, 0, len(errs))
	for _, err := range errs {
		var off int64
		var fe *fieldError
		if errors.As(err, &fe) {
			off = fe.off
			if off < 0 {
				off = w.lookup(fe.path)
			}
		} else {
			off, err = jsonpos.Locate(w.data, err)
		}
		if off < 0 || off > int64(len(w.data)) {
			out = append(out, fmt.Errorf("%s: %w", filename, err))
			continue
		}
		line, col := jsonpos.LineCol(w.data, off)
		out = append(out, fmt.Errorf("%s: line %d:%d: %w", filename, line, col, err))
	}
	return errors.Join(out...)
}

// lookup is the offset of path's value, or of its nearest recorded parent.
func (w *stateWalker) lookup(path string) int64 {
	if p, ok := jsonpos.Nearest(path, func(p string) bool { _, ok := w.pos[p]; return ok }); ok {
		return w.pos[p]
	}
	return -1
}

// newerVersion returns the envelope's "version" when it is an integer
// above Version (a file of a newer infscale), read leniently: the strict
// walk reports the keys this version does not know before the version.
func newerVersion(data []byte, bare bool) (int, bool) {
	if bare {
		return 0, false
	}
	var peek struct {
		Version json.RawMessage `json:"version"`
	}
	if json.Unmarshal(data, &peek) != nil {
		return 0, false
	}
	v, err := strconv.Atoi(string(peek.Version))
	return v, err == nil && v > Version
}
