package promql

import (
	"bytes"
	"math"
	"strconv"
	"strings"
)

// decodeVector reads the answer Prometheus writes for a successful instant
// query of a vector, the hot path of a batched query (10,000 samples of
// {"metric":{"infscale_target":"<k>"},"value":[<time>,"<value>"]} in one
// answer at 10,000 targets), without encoding/json's reflection. It
// accepts only that shape, written as Prometheus writes it:
//
//	{"status":"success","warnings":[...],"data":{"resultType":"vector","result":[
//	  {"metric":{"<label>":"<value>",...},"value":[<number>,"<float>"]},...]}}
//
// (keys in any order, "warnings" optional, JSON whitespace anywhere), and
// the same with Thanos Query's "analysis":{} (or null) in "data", which
// every answer of Thanos v0.42 carries when no query analysis was asked
// for: declined, each of its answers went to encoding/json. It
// reports ok = false for anything else: an error status, another result
// type, a missing or unknown key, a duplicate key, a string with an escape,
// a control byte or (in a warning) a non-ASCII byte, a label name that
// encoding/json would match to TargetLabel in another case, a native
// histogram, a value that does not parse, a truncated body, trailing bytes.
// decodeTagged then decodes the body with encoding/json, so every answer
// the fast path declines gives the values or the error it always gave; on
// what it accepts both give the same values (TestDecodeVectorSameAsJSON).
func decodeVector(body []byte) (vals []taggedValue, warnings []string, ok bool) {
	d := vecDecoder{b: body}
	var seenStatus, seenData, seenWarnings bool
	if !d.object(func(key []byte) bool {
		switch {
		case string(key) == "status" && !seenStatus:
			seenStatus = true
			return d.strIs("success")
		case string(key) == "data" && !seenData:
			seenData = true
			var seenType, seenResult, seenAnalysis bool
			return d.object(func(key []byte) bool {
				switch {
				case string(key) == "analysis" && !seenAnalysis:
					seenAnalysis = true
					return d.emptyOrNull()
				case string(key) == "resultType" && !seenType:
					seenType = true
					return d.strIs("vector")
				case string(key) == "result" && !seenResult:
					seenResult = true
					vals = make([]taggedValue, 0, d.samplesHint())
					return d.array(func() bool {
						v, ok := d.sample()
						vals = append(vals, v)
						return ok
					})
				}
				return false
			}) && seenType && seenResult
		case string(key) == "warnings" && !seenWarnings:
			seenWarnings = true
			return d.array(func() bool {
				s, ok := d.str()
				for _, c := range s {
					if c >= 0x80 { // encoding/json would replace invalid UTF-8
						return false
					}
				}
				warnings = append(warnings, string(s))
				return ok
			})
		}
		return false
	}) || !seenStatus || !seenData {
		return nil, nil, false
	}
	d.space()
	if d.i != len(d.b) {
		return nil, nil, false
	}
	return vals, warnings, true
}

// vecDecoder scans a JSON body for decodeVector. Each method consumes
// one value (leading whitespace included) and reports false on anything
// outside decodeVector's subset.
type vecDecoder struct {
	b []byte
	i int
}

func (d *vecDecoder) space() {
	for d.i < len(d.b) {
		switch d.b[d.i] {
		case ' ', '\t', '\n', '\r':
			d.i++
		default:
			return
		}
	}
}

// next skips whitespace and consumes c.
func (d *vecDecoder) next(c byte) bool {
	d.space()
	if d.i < len(d.b) && d.b[d.i] == c {
		d.i++
		return true
	}
	return false
}

// str reads a string without escapes or control bytes and returns its
// bytes (a sub-slice of the body).
func (d *vecDecoder) str() ([]byte, bool) {
	if !d.next('"') {
		return nil, false
	}
	for j := d.i; j < len(d.b); j++ {
		switch c := d.b[j]; {
		case c == '"':
			s := d.b[d.i:j]
			d.i = j + 1
			return s, true
		case c == '\\' || c < 0x20:
			return nil, false
		}
	}
	return nil, false
}

// strIs reads a string and reports whether it is want.
func (d *vecDecoder) strIs(want string) bool {
	s, ok := d.str()
	return ok && string(s) == want
}

// object reads {"key": <value>, ...}, calling member after each key's
// colon to read its value.
func (d *vecDecoder) object(member func(key []byte) bool) bool {
	if !d.next('{') {
		return false
	}
	if d.next('}') {
		return true
	}
	for {
		key, ok := d.str()
		if !ok || !d.next(':') || !member(key) {
			return false
		}
		if d.next('}') {
			return true
		}
		if !d.next(',') {
			return false
		}
	}
}

// emptyOrNull reads {} or null.
func (d *vecDecoder) emptyOrNull() bool {
	if d.next('{') {
		return d.next('}')
	}
	d.space()
	if bytes.HasPrefix(d.b[d.i:], []byte("null")) {
		d.i += len("null")
		return true
	}
	return false
}

// array reads [<elem>, ...].
func (d *vecDecoder) array(elem func() bool) bool {
	if !d.next('[') {
		return false
	}
	if d.next(']') {
		return true
	}
	for {
		if !elem() {
			return false
		}
		if d.next(']') {
			return true
		}
		if !d.next(',') {
			return false
		}
	}
}

// number reads a JSON number (RFC 8259 grammar).
func (d *vecDecoder) number() bool {
	d.space()
	b, i := d.b, d.i
	digits := func() bool {
		j := i
		for i < len(b) && b[i] >= '0' && b[i] <= '9' {
			i++
		}
		return i > j
	}
	if i < len(b) && b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case !digits():
		return false
	}
	if i < len(b) && b[i] == '.' {
		i++
		if !digits() {
			return false
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		if !digits() {
			return false
		}
	}
	d.i = i
	return true
}

// sample reads {"metric": {...}, "value": [<time>, "<value>"]}: the
// target's tag, the time and the value.
func (d *vecDecoder) sample() (taggedValue, bool) {
	v := taggedValue{target: -1}
	var seenMetric, seenValue bool
	ok := d.object(func(key []byte) bool {
		switch {
		case string(key) == "metric" && !seenMetric:
			seenMetric = true
			seenTag := false
			return d.object(func(name []byte) bool {
				val, ok := d.str()
				if !ok {
					return false
				}
				if string(name) == TargetLabel {
					if seenTag {
						return false
					}
					seenTag = true
					v.target = tagIndex(val)
					return true
				}
				// encoding/json matches struct fields case-insensitively,
				// with Unicode folding for non-ASCII names.
				for _, c := range name {
					if c >= 0x80 {
						return false
					}
				}
				return !strings.EqualFold(string(name), TargetLabel)
			})
		case string(key) == "value" && !seenValue:
			seenValue = true
			if !d.next('[') {
				return false
			}
			d.space()
			from := d.i
			if !d.number() {
				return false
			}
			at, err := strconv.ParseFloat(string(d.b[from:d.i]), 64)
			if err != nil || !d.next(',') {
				return false
			}
			v.at = at
			s, ok := d.str()
			if !ok || !d.next(']') {
				return false
			}
			f, ok := parseSampleValue(s)
			v.value = f
			return ok
		}
		return false
	})
	return v, ok && seenMetric && seenValue
}

// samplesHint is a capacity for the result slice: the number of "metric"
// keys left in the body (at most one sample per 20 bytes of body).
func (d *vecDecoder) samplesHint() int {
	return bytes.Count(d.b[d.i:], []byte(`"metric"`))
}

// parseSampleValue parses a sample's quoted value as samplePair does
// (strconv.ParseFloat: "NaN", "+Inf", "-Inf" and Go's float syntax).
func parseSampleValue(s []byte) (float64, bool) {
	f, err := strconv.ParseFloat(string(s), 64)
	return f, err == nil
}

// tagIndex is the branch index a TargetLabel value names, as batchText
// writes them (strconv.Itoa(k)), or -1: it accepts what branchIndex did
// (strconv.Atoi, no '+', no leading zero), without allocating.
func tagIndex[T string | []byte](s T) int {
	if len(s) == 0 || s[0] == '+' || (len(s) > 1 && s[0] == '0') {
		return -1
	}
	if s[0] == '-' { // Atoi: "-0", "-00", ... are 0; other negatives are out of range
		if len(s) == 1 {
			return -1
		}
		for i := 1; i < len(s); i++ {
			if s[i] != '0' {
				return -1
			}
		}
		return 0
	}
	if len(s) > 9 { // beyond any batch (and Atoi's overflow)
		for i := 0; i < len(s); i++ {
			if s[i] < '0' || s[i] > '9' {
				return -1
			}
		}
		return math.MaxInt
	}
	k := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return -1
		}
		k = k*10 + int(s[i]-'0')
	}
	return k
}
