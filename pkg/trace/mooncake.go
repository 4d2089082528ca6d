package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/infscale/infscale/internal/jsonpos"
)

// mooncakeRow is one line of a Mooncake trace (kvcache-ai/Mooncake,
// FAST 2025): {"timestamp": ms since start, "input_length": tokens,
// "output_length": tokens, "hash_ids": [...]} (hash_ids, the 512-token
// prefix blocks, are ignored). mooncakeReader.decode fills it key by key
// (the tags name the keys); a nil field is a key the row lacks.
type mooncakeRow struct {
	Timestamp    *float64 `json:"timestamp"`
	InputLength  *int64   `json:"input_length"`
	OutputLength *int64   `json:"output_length"`
}

type mooncakeReader struct {
	*lines
	order
	skip json.RawMessage // a value not read (hash_ids), reused
}

// OpenMooncake starts a pass over a Mooncake JSON-lines trace.
func OpenMooncake(name string) (Reader, error) {
	l, err := openLines(name)
	if err != nil {
		return nil, err
	}
	r := &mooncakeReader{lines: l}
	r.show = func(t float64) string { return fmt.Sprintf("%.10g ms", t*1000) }
	return r, nil
}

// mooncakeWant is what a Mooncake row is, for errors.
const mooncakeWant = `want a JSON object {"timestamp": ms, "input_length": n, "output_length": n}`

// mooncakeTokens is what each token count may be, for errors: the range
// the CSV formats name too (a Request holds int32 counts; 3000000000 was
// refused as "want an integer >= 1").
var mooncakeTokens = map[string]string{
	"input_length":  fmt.Sprintf("want an integer 1..%d", math.MaxInt32),
	"output_length": fmt.Sprintf("want an integer 0..%d", math.MaxInt32),
}

func (r *mooncakeReader) Next() (Request, error) {
	b, err := r.nextNonBlank()
	if err != nil {
		return Request{}, err
	}
	if t := bytes.TrimSpace(b); len(t) == 0 || t[0] != '{' {
		return Request{}, r.errorf("%s, found %s", mooncakeWant, clip(string(b)))
	}
	row, err := r.decode(b)
	if err != nil {
		return Request{}, err
	}
	switch {
	case row.Timestamp == nil:
		return Request{}, r.errorf("no \"timestamp\": %s", mooncakeWant)
	case *row.Timestamp < 0 || math.IsInf(*row.Timestamp, 0):
		return Request{}, r.errorf("timestamp %g: want milliseconds >= 0", *row.Timestamp)
	case row.InputLength == nil:
		return Request{}, r.errorf("no \"input_length\": %s", mooncakeWant)
	case *row.InputLength < 1 || *row.InputLength > math.MaxInt32:
		return Request{}, r.errorf("input_length %d: %s", *row.InputLength, mooncakeTokens["input_length"])
	case row.OutputLength == nil:
		return Request{}, r.errorf("no \"output_length\": %s", mooncakeWant)
	case *row.OutputLength < 0 || *row.OutputLength > math.MaxInt32:
		return Request{}, r.errorf("output_length %d: %s", *row.OutputLength, mooncakeTokens["output_length"])
	}
	t := *row.Timestamp / 1000
	if msg := r.check(t); msg != "" {
		return Request{}, r.errorf("%s", msg)
	}
	return request(t, int32(*row.InputLength), int32(*row.OutputLength)), nil
}

// decode reads one row's object member by member, as json.Unmarshal
// would read it into mooncakeRow, but with the keys exact and each once:
// encoding/json keeps the last of a key given twice ("input_length": 10,
// "input_length": 99999 replayed 99,999 tokens) and takes "Input_Length"
// for "input_length". A key given twice (any key, as a calibration file
// and a config.json refuse it) is named with both columns (internal/
// jsonpos), a case variant of a key the row is read by with that key.
func (r *mooncakeReader) decode(b []byte) (mooncakeRow, error) {
	var row mooncakeRow
	dec := json.NewDecoder(bytes.NewReader(b))
	if _, err := dec.Token(); err != nil { // '{': Next checked it
		return row, r.malformed(err)
	}
	var keys [4]string
	seen := keys[:0]
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return row, r.malformed(err)
		}
		key := tok.(string) // an object's member starts with its key
		if slices.Contains(seen, key) {
			return row, r.duplicate(b, key)
		}
		seen = append(seen, key)
		var dst any
		switch key {
		case "timestamp":
			dst = &row.Timestamp
		case "input_length":
			dst = &row.InputLength
		case "output_length":
			dst = &row.OutputLength
		default:
			for _, k := range []string{"timestamp", "input_length", "output_length"} {
				if strings.EqualFold(key, k) {
					return row, r.errorf("key %q: the names are exact: write %q", key, k)
				}
			}
			dst = &r.skip
		}
		if err := dec.Decode(dst); err != nil {
			var te *json.UnmarshalTypeError
			if errors.As(err, &te) {
				want := mooncakeTokens[key]
				if key == "timestamp" {
					want = "want a number of milliseconds"
				}
				return row, r.errorf("%s: a JSON %s: %s", key, te.Value, want)
			}
			return row, r.malformed(err)
		}
	}
	if _, err := dec.Token(); err != nil { // '}'
		return row, r.malformed(err)
	}
	if rest := bytes.TrimSpace(b[dec.InputOffset():]); len(rest) > 0 {
		return row, r.errorf("%s: data after the object: %s", mooncakeWant, clip(string(rest)))
	}
	return row, nil
}

// duplicate is the error of a row b whose key is given twice, at its
// columns (internal/jsonpos finds them: b is one line).
func (r *mooncakeReader) duplicate(b []byte, key string) error {
	ix, err := jsonpos.New(b)
	if err != nil { // malformed after the second key
		return r.malformed(err)
	}
	// A top-level key's path is the key itself.
	i := slices.IndexFunc(ix.Duplicates(), func(d jsonpos.Duplicate) bool { return d.Path == key })
	if i < 0 { // not expected: both walks read the same keys
		return r.errorf("%s: key given twice; give it once (a JSON decoder keeps either copy)", key)
	}
	d := ix.Duplicates()[i]
	_, first := ix.LineCol(d.First.Key)
	_, second := ix.LineCol(d.Second.Key)
	return r.errorf("column %d: %s: key given twice (first at column %d); give it once (a JSON decoder keeps either copy)", second, d.Path, first)
}

// malformed is the error of a row that is not one JSON object, with
// encoding/json's complaint (a row cut short: "unexpected end of JSON
// input", as json.Unmarshal says it).
func (r *mooncakeReader) malformed(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return r.errorf("%s: unexpected end of JSON input", mooncakeWant)
	}
	return r.errorf("%s: %v", mooncakeWant, err)
}
