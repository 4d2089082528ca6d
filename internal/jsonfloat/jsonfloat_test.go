package jsonfloat

import (
	"encoding/json"
	"math"
	"testing"
)

// TestRoundTrip: NaN and both infinities write null, finite values their
// shortest exact form (0.1 as 0.1, 1e21 as 1e+21); null reads back NaN.
func TestRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		v    float64
		want string
	}{
		{math.NaN(), "null"}, {math.Inf(1), "null"}, {math.Inf(-1), "null"},
		{0, "0"}, {0.1, "0.1"}, {-2.5, "-2.5"}, {1e21, "1e+21"},
	} {
		b, err := json.Marshal(struct{ V Float }{Float(tc.v)})
		if err != nil || string(b) != `{"V":`+tc.want+`}` {
			t.Errorf("%v: %s, %v; want {\"V\":%s}", tc.v, b, err, tc.want)
		}
		var back struct{ V Float }
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if got := float64(back.V); tc.want == "null" && !math.IsNaN(got) || tc.want != "null" && got != tc.v {
			t.Errorf("%s read back as %v", b, got)
		}
	}
	var f Float
	if err := json.Unmarshal([]byte(`"1"`), &f); err == nil {
		t.Error(`"1" (a string) read as a number`)
	}
}
