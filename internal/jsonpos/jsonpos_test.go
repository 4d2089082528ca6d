package jsonpos

import (
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"testing"
)

type point struct {
	Batch int     `json:"batch"`
	StepS float64 `json:"step_s"`
}

type doc struct {
	Name   string  `json:"name"`
	Points []point `json:"points"`
	Inner  *struct {
		X int `json:"x"`
	} `json:"inner"`
}

// TestIndex: offsets, line:column and unknown keys of a document whose
// positions are counted by hand (bytes from 0; lines and columns from 1).
func TestIndex(t *testing.T) {
	data := []byte("{\n  \"name\": \"a\",\n  \"points\": [{\"batch\": 1}, {\"Batch\": 2, \"stepS\": 3}],\n  \"inner\": {\"x\": 1, \"y\": 2},\n  \"extra\": {\"deep\": 1}\n}\n")
	ix, err := New(data)
	if err != nil {
		t.Fatal(err)
	}
	// "name" is at byte 4 (line 2, column 3), its value at byte 12.
	if p := ix.Lookup("name"); p.Key != 4 || p.Value != 12 {
		t.Errorf("name at %+v, want key 4, value 12", p)
	}
	if l, c := ix.LineCol(4); l != 2 || c != 3 {
		t.Errorf("offset 4 at %d:%d, want 2:3", l, c)
	}
	// Line 3 starts at byte 17: `  "points": [{"batch": 1}, ...`; the
	// second element's "Batch" is at column 29.
	p := ix.Lookup("points[1].Batch")
	if l, c := ix.LineCol(p.Key); l != 3 || c != 29 {
		t.Errorf("points[1].Batch at %d:%d, want 3:29", l, c)
	}
	// A missing path is its nearest ancestor's.
	if ix.Lookup("points[0].step_s") != ix.Lookup("points[0]") {
		t.Errorf("points[0].step_s: want points[0]'s position")
	}
	var got []string
	for _, u := range ix.UnknownKeys(reflect.TypeFor[doc]()) {
		got = append(got, u.Path)
	}
	want := []string{"points[1].Batch", "points[1].stepS", "inner.y", "extra"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("unknown keys %q, want %q (exact names; nothing below an unknown key)", got, want)
	}
	for _, tc := range []struct {
		in   string
		want func(error) bool
	}{
		// The offending "}" is byte 8.
		{`{"a": 1,}`, func(err error) bool { var se *json.SyntaxError; return errors.As(err, &se) && se.Offset == 8 }},
		{`{"a": 1`, func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) }},
		{"{} {}", func(err error) bool { var te *TrailingError; return errors.As(err, &te) && te.Offset == 3 }},
	} {
		if _, err := New([]byte(tc.in)); !tc.want(err) {
			t.Errorf("%q: %v", tc.in, err)
		}
	}
	// A bad value is placed at its own byte (the decoder counted from where
	// the value's read began: the x below was put at 1:8, on the line above
	// it). Offsets and line:column counted by hand.
	for _, tc := range []struct {
		in        string
		off       int64
		line, col int
	}{
		{"{\n  \"kind\": x\n}", 12, 2, 11}, // x: "{\n" is 2 bytes, then `  "kind": ` 10
		{`{"a": [1, 2, x]}`, 13, 1, 14},    // the x in the array
		{`{"a": 1, "b": NaN}`, 14, 1, 15},  // NaN is not JSON
		{`{"a": tru}`, 9, 1, 10},           // the } that ends the literal
		{"abc", 0, 1, 1},                   // a CSV header, say
		{"\xef\xbb\xbf{}", 0, 1, 1},        // a byte-order mark
	} {
		_, err := New([]byte(tc.in))
		var se *json.SyntaxError
		if !errors.As(err, &se) || se.Offset != tc.off {
			t.Errorf("%q: %v, want a syntax error at byte %d", tc.in, err, tc.off)
			continue
		}
		if l, c := LineCol([]byte(tc.in), se.Offset); l != tc.line || c != tc.col {
			t.Errorf("%q: %d:%d, want %d:%d", tc.in, l, c, tc.line, tc.col)
		}
	}
}

// TestDuplicates: a key given twice in one object is listed with both
// positions (counted by hand), in document order, nested objects too; a
// key that holds a dot ("a.b") and the path a.b of another object are not
// one key.
func TestDuplicates(t *testing.T) {
	// {"a": 1, "b": {"c": 2, "c": 3}, "a.b": 4, "a": 5}: "a" at bytes 1
	// (value 6) and 42 (value 47); b's "c" at 15 (value 20) and 23 (value 28).
	ix, err := New([]byte(`{"a": 1, "b": {"c": 2, "c": 3}, "a.b": 4, "a": 5}`))
	if err != nil {
		t.Fatal(err)
	}
	want := []Duplicate{{"b.c", Pos{15, 20}, Pos{23, 28}}, {"a", Pos{1, 6}, Pos{42, 47}}}
	if got := ix.Duplicates(); !reflect.DeepEqual(got, want) {
		t.Errorf("duplicates %+v, want %+v", got, want)
	}
	ix, err = New([]byte(`{"a.b": 1, "a": {"b": 2}, "x": [{"k": 1}, {"k": 2}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := ix.Duplicates(); len(got) != 0 {
		t.Errorf("duplicates %+v, want none (distinct objects' keys)", got)
	}
}
