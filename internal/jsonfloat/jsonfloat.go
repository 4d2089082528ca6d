// Package jsonfloat is a float64 for JSON output in which an unknown value
// (NaN, ±Inf: no data, a quantile of nothing) is null, never 0 nor an
// encoding error (encoding/json refuses NaN).
package jsonfloat

import (
	"encoding/json"
	"math"
	"strconv"
)

// Float is a float64 that marshals NaN and ±Inf as null and reads null
// back as NaN; a finite value is written in the shortest form that reads
// back exactly ('g', -1).
type Float float64

// MarshalJSON writes null for a non-finite value.
func (f Float) MarshalJSON() ([]byte, error) {
	v := float64(f)
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return []byte("null"), nil
	}
	return strconv.AppendFloat(nil, v, 'g', -1, 64), nil
}

// UnmarshalJSON reads a number, or null as NaN.
func (f *Float) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = Float(math.NaN())
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = Float(v)
	return nil
}
