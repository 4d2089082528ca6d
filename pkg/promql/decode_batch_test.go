package promql

import (
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
)

// decodeCases are answers of /api/v1/query: the shape Prometheus writes,
// and every way of leaving it that decodeVector must decline (encoding/json
// then decodes them as before).
var decodeCases = []struct {
	name string
	body string
	fast bool // decodeVector takes it
}{
	{"empty vector", `{"status":"success","data":{"resultType":"vector","result":[]}}`, true},
	{"batch", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"infscale_target":"0"},"value":[1767607200,"50"]},{"metric":{"infscale_target":"1"},"value":[1767607200.5,"0.3"]}]}}`, true},
	{"spaces, keys in another order, other labels, warnings", " {\n\"warnings\" : [\"w1\", \"w2\"], \"data\":{\"result\":[ {\"value\":[ 1.5e9 , \"-2.5e-3\" ] , \"metric\":{\"pod\":\"é\",\"infscale_target\":\"7\"}} ],\"resultType\":\"vector\"},\"status\":\"success\"}\t\r\n", true},
	{"Thanos Query's empty analysis", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"infscale_target":"0"},"value":[1796597955.660,"30"]},{"metric":{"infscale_target":"1"},"value":[1796597955.660,"1"]}],"analysis":{}}}`, true},
	{"analysis null, first", `{"status":"success","data":{"analysis" : null ,"resultType":"vector","result":[]}}`, true},
	{"NaN and infinities", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"infscale_target":"0"},"value":[1,"NaN"]},{"metric":{"infscale_target":"1"},"value":[1,"+Inf"]},{"metric":{"infscale_target":"2"},"value":[1,"-Inf"]}]}}`, true},
	{"tags that are no branch index", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]},{"metric":{"infscale_target":"01"},"value":[1,"1"]},{"metric":{"infscale_target":"+1"},"value":[1,"1"]},{"metric":{"infscale_target":"x"},"value":[1,"1"]},{"metric":{"infscale_target":""},"value":[1,"1"]},{"metric":{"infscale_target":"-0"},"value":[1,"1"]},{"metric":{"infscale_target":"-1"},"value":[1,"1"]},{"metric":{"infscale_target":"99999999999"},"value":[1,"1"]}]}}`, true},

	{"error status", `{"status":"error","errorType":"bad_data","error":"parse error"}`, false},
	{"matrix", `{"status":"success","data":{"resultType":"matrix","result":[]}}`, false},
	{"no status", `{"data":{"resultType":"vector","result":[]}}`, false},
	{"no data", `{"status":"success"}`, false},
	{"no result", `{"status":"success","data":{"resultType":"vector"}}`, false},
	{"no metric", `{"status":"success","data":{"resultType":"vector","result":[{"value":[1,"2"]}]}}`, false},
	{"no value", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{}}]}}`, false},
	{"native histogram", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"histogram":[1,{"count":"1"}]}]}}`, false},
	{"unquoted value", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,2]}]}}`, false},
	{"value not a number", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"abc"]}]}}`, false},
	{"three elements", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,2,"3"]}]}}`, false},
	{"time not a number", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":["1","3"]}]}}`, false},
	{"time with a leading zero", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[01,"3"]}]}}`, false},
	{"null value", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":null}]}}`, false},
	{"escaped label value", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"infscale_target":"\u0031"},"value":[1,"3"]}]}}`, false},
	{"escaped quote in another label", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"a":"x\"y","infscale_target":"1"},"value":[1,"3"]}]}}`, false},
	{"control byte in a string", "{\"status\":\"success\",\"data\":{\"resultType\":\"vector\",\"result\":[{\"metric\":{\"a\":\"x\ty\"},\"value\":[1,\"3\"]}]}}", false},
	{"target label in capitals", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"INFSCALE_TARGET":"1"},"value":[1,"3"]}]}}`, false},
	{"non-ASCII label name", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"infſcale_target":"1"},"value":[1,"3"]}]}}`, false},
	{"target label twice", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"infscale_target":"1","infscale_target":"2"},"value":[1,"3"]}]}}`, false},
	{"status twice", `{"status":"success","status":"error","data":{"resultType":"vector","result":[]}}`, false},
	{"key in capitals", `{"Status":"success","data":{"resultType":"vector","result":[]}}`, false},
	{"analysis with content", `{"status":"success","data":{"resultType":"vector","result":[],"analysis":{"name":"[*concurrencyOperator]"}}}`, false},
	{"analysis twice", `{"status":"success","data":{"resultType":"vector","result":[],"analysis":{},"analysis":{}}}`, false},
	{"analysis outside data", `{"status":"success","analysis":{},"data":{"resultType":"vector","result":[]}}`, false},
	{"analysis nul", `{"status":"success","data":{"resultType":"vector","result":[],"analysis":nul}}`, false},
	{"unknown key", `{"status":"success","infos":["i"],"data":{"resultType":"vector","result":[]}}`, false},
	{"non-ASCII warning", `{"status":"success","warnings":["é"],"data":{"resultType":"vector","result":[]}}`, false},
	{"null warnings", `{"status":"success","warnings":null,"data":{"resultType":"vector","result":[]}}`, false},
	{"truncated", `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"infscale_target":"0"},"value":[1,"5"`, false},
	{"trailing bytes", `{"status":"success","data":{"resultType":"vector","result":[]}} x`, false},
	{"trailing comma", `{"status":"success","data":{"resultType":"vector","result":[],}}`, false},
	{"not JSON", `<html>login</html>`, false},
	{"empty", ``, false},
}

// decodeVector takes exactly the answers of Prometheus's shape, and on
// those reads what encoding/json reads; every answer gives decodeTagged's
// values or error as encoding/json alone gives them.
func TestDecodeVectorSameAsJSON(t *testing.T) {
	for _, tc := range decodeCases {
		t.Run(tc.name, func(t *testing.T) {
			fast, fwarn, ok := decodeVector([]byte(tc.body))
			if ok != tc.fast {
				t.Fatalf("decodeVector took it: %v, want %v", ok, tc.fast)
			}
			slow, swarn, serr := decodeTaggedJSON([]byte(tc.body))
			if ok && (serr != nil || !sameTagged(fast, slow) || !slices.Equal(fwarn, swarn)) {
				t.Errorf("decodeVector %v %q, encoding/json %v %q (%v)", fast, fwarn, slow, swarn, serr)
			}
			got, gwarn, gerr := decodeTagged(200, []byte(tc.body))
			if !sameTagged(got, slow) || !slices.Equal(gwarn, swarn) || errText(gerr) != errText(serr) {
				t.Errorf("decodeTagged %v %q (%v), encoding/json %v %q (%v)", got, gwarn, gerr, slow, swarn, serr)
			}
		})
	}
}

// The errors of malformed answers are client_golang's kinds, with
// encoding/json's or samplePair's words; NaN and +Inf are values.
func TestDecodeTaggedMalformed(t *testing.T) {
	for _, tc := range []struct {
		body    string
		typ     v1.ErrorType
		msgPart string
	}{
		{`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"5"`, v1.ErrBadResponse, "unexpected end of JSON input"},
		{`{"status":"error","errorType":"bad_data","error":"parse error"}`, v1.ErrBadData, "parse error"},
		{`{"status":"success","data":{"resultType":"matrix","result":[]}}`, v1.ErrBadResponse, `result type "matrix", want vector`},
		{`{"status":"success"}`, v1.ErrBadResponse, `status "success" without "data"`},
		// Prometheus's answers say "success" or "error": another value, or
		// none, is not its answer, whatever the data (they were read).
		{`{"data":{"resultType":"vector","result":[{"metric":{},"value":[1,"5"]}]}}`, v1.ErrBadResponse, `no "status" where the Prometheus HTTP API answers "success" or "error"`},
		{`{"status":"pending","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"5"]}]}}`, v1.ErrBadResponse, `status "pending" where`},
		// A string's or a scalar's result is not read as a vector's (it
		// said "cannot unmarshal number into Go struct field").
		{`{"status":"success","data":{"resultType":"string","result":[1,"5"]}}`, v1.ErrBadResponse, `result type "string", want vector (the query's type)`},
		{`{"status":"success","data":{"resultType":"scalar","result":[1,"5"]}}`, v1.ErrBadResponse, `result type "scalar", want vector (the query's type)`},
		{`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,2]}]}}`, v1.ErrBadResponse, "want a quoted number"},
		{`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"abc"]}]}}`, v1.ErrBadResponse, "invalid syntax"},
	} {
		_, _, err := decodeTagged(200, []byte(tc.body))
		var ae *v1.Error
		if !errors.As(err, &ae) || ae.Type != tc.typ || !strings.Contains(ae.Msg, tc.msgPart) {
			t.Errorf("%.50s: %v, want %s error with %q", tc.body, err, tc.typ, tc.msgPart)
		}
	}
	vals, _, err := decodeTagged(200, []byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{"infscale_target":"0"},"value":[1,"NaN"]},{"metric":{"infscale_target":"1"},"value":[1,"+Inf"]},{"metric":{"infscale_target":"2"}}]}}`))
	if err != nil || len(vals) != 3 || vals[0].target != 0 || !math.IsNaN(vals[0].value) || !math.IsInf(vals[1].value, 1) ||
		vals[2].target != 2 || !math.IsNaN(vals[2].value) {
		t.Errorf("NaN, +Inf, no value: %v (%v)", vals, err)
	}
}

// Whatever the body, decodeVector either declines it or reads what
// encoding/json reads.
func FuzzDecodeVector(f *testing.F) {
	for _, tc := range decodeCases {
		f.Add([]byte(tc.body))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fast, fwarn, ok := decodeVector(body)
		if !ok {
			return
		}
		slow, swarn, err := decodeTaggedJSON(body)
		if err != nil || !sameTagged(fast, slow) || !slices.Equal(fwarn, swarn) {
			t.Errorf("%q: decodeVector %v %q, encoding/json %v %q (%v)", body, fast, fwarn, slow, swarn, err)
		}
	})
}

func sameTagged(a, b []taggedValue) bool {
	return slices.EqualFunc(a, b, func(x, y taggedValue) bool {
		return x.target == y.target && (x.value == y.value && math.Signbit(x.value) == math.Signbit(y.value) ||
			math.IsNaN(x.value) && math.IsNaN(y.value))
	})
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
