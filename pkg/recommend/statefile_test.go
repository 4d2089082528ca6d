package recommend

import (
	"encoding/json"
	"strings"
	"testing"
)

// What Decide writes reads back through DecodeState.
func TestDecodeStateRoundTrip(t *testing.T) {
	p := mustValidate(t, queuePolicy(4))
	p.Lookahead = 90e9
	var st State
	Decide(p, queueObs(1, 12), &st, at(1000))
	Decide(p, queueObs(3, 4), &st, at(1015))
	data, err := json.MarshalIndent(&st, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeState(data, "st.json")
	if err != nil {
		t.Fatalf("DecodeState: %v\n%s", err, data)
	}
	// Recommendations: the current 1 recorded at the first decision (the
	// HPA's recordInitialRecommendation), then 3 at 1000 and 1 at 1015.
	if back.LastDesired != 3 || len(back.Recommendations) != 3 || !back.LastAt.Equal(at(1015)) {
		t.Errorf("decoded %+v", back)
	}
}

// Values Decide never writes, unknown keys and bad times are errors naming
// the file, the line:column (counted by hand in the documents below) and
// the field.
func TestDecodeStateInvalid(t *testing.T) {
	for _, tc := range []struct {
		name, doc string
		want      []string
	}{
		{"negative last_desired", `{"last_desired": -5}`, // value at column 18
			[]string{"st.json: line 1:18: last_desired: -5 must be in 0..2147483647"}},
		{"negative replicas", "{\n  \"recommendations\": [{\"at\": \"1970-01-01T00:16:40Z\", \"replicas\": -3}]\n}",
			// line 2: 2 spaces, "recommendations" (17) ends at column 19, ": [{" 20..23,
			// "at" 24..27, ": " 28..29, the time (22) 30..51, ", " 52..53,
			// "replicas" (10) 54..63, ": " 64..65 → -3 at column 66.
			[]string{"st.json: line 2:66: recommendations[0].replicas: -3 must be in 0..2147483647"}},
		{"negative change", "{\"scale_up_events\": [{\"at\": \"1970-01-01T00:16:40Z\", \"change\": -100}]}",
			// "{" 1, "scale_up_events" (17) 2..18, ": [{" 19..22, "at" 23..26,
			// ": " 27..28, the time 29..50, ", " 51..52, "change" (8) 53..60,
			// ": " 61..62 → -100 at column 63.
			[]string{"line 1:63: scale_up_events[0].change: -100 must be in 1..2147483647"}},
		{"unknown key", "{\n  \"last_desired\": 3,\n  \"foo\": 1\n}", []string{`line 3:3: unknown key "foo"`, "allowed: recommendations,"}},
		{"bad at", "{\n  \"demand\": [\n    {\"at\": \"noon\", \"demand\": 3}\n  ]\n}",
			// line 3: 4 spaces + {"at": = 4+1+5 = 10, space → column 12.
			[]string{`line 3:12: demand[0].at: "noon" is not an RFC3339 time`}},
		{"negative demand", `{"demand": [{"at": "1970-01-01T00:16:40Z", "demand": -1}]}`, []string{"demand[0].demand: -1 must be a finite number >= 0"}},
		{"not oldest first", `{"recommendations": [{"at": "1970-01-01T00:16:40Z", "replicas": 1}, {"at": "1970-01-01T00:00:40Z", "replicas": 1}]}`,
			[]string{"recommendations[1].at: 1970-01-01T00:00:40Z is before the previous entry's 1970-01-01T00:16:40Z"}},
		{"missing at", `{"scale_down_events": [{"change": 1}]}`, []string{"scale_down_events[0].at: missing"}},
		{"fraction", `{"last_desired": 1.5}`, []string{"line 1:18: last_desired: 1.5: want a whole number"}},
		{"syntax", "{\n  \"recommendations\": [1,\n", []string{"st.json: line 2:23: recommendations[0]: want an object, got 1"}},
		{"truncated", `{"last_desired": 3`, []string{"st.json: line 1:19: unexpected end"}},
		{"two objects", `{} {}`, []string{"line 1:4: data after the JSON object"}},
		{"array", `[]`, []string{"line 1:1: the state: want an object, got an array"}},
		{"empty", "\n", []string{"st.json: empty"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := DecodeState([]byte(tc.doc), "st.json")
			if err == nil {
				t.Fatalf("accepted: %+v", st)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// Several problems are reported at once.
func TestDecodeStateAllProblems(t *testing.T) {
	_, err := DecodeState([]byte(`{"last_desired": -1, "scale_down_events": [{"at": "1970-01-01T00:16:40Z", "change": 0}]}`), "st.json")
	if err == nil || !strings.Contains(err.Error(), "last_desired: -1") || !strings.Contains(err.Error(), "scale_down_events[0].change: 0") {
		t.Errorf("error %v, want both problems", err)
	}
}

// FuzzDecodeState: any bytes decode or give an error naming the file; a
// state that decodes is valid.
func FuzzDecodeState(f *testing.F) {
	f.Add([]byte(`{"recommendations":[{"at":"1970-01-01T00:16:40Z","replicas":3}],"last_desired":3,"last_at":"1970-01-01T00:16:40Z"}`))
	f.Add([]byte(`{"demand":[{"at":"x","demand":-1}],"foo":[1,{"a":2}]}`))
	f.Add([]byte(`{"scale_up_events":{"at":1}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		st, err := DecodeState(data, "f.json")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.json") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if err := st.Validate(); err != nil {
			t.Fatalf("decoded an invalid state: %v", err)
		}
	})
}
