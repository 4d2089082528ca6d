package statefile

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/recommend"
)

// decodeState decodes a bare recommend.State document (the form decide
// --state wrote before the envelope).
func decodeState(data []byte, name string) (*recommend.State, error) {
	f, err := Decode(data, name)
	if err != nil {
		return nil, err
	}
	return &f.State, nil
}

func at(sec int64) time.Time { return time.Unix(sec, 0).UTC() }

// What Decide writes reads back: written with Write, read with Read.
func TestWriteReadRoundTrip(t *testing.T) {
	p := &recommend.Policy{Metrics: []recommend.Metric{{Signal: recommend.SignalQueue, Target: 4}}, Min: 1, Max: 10, Lookahead: 90 * time.Second}
	if err := p.Validate(); err != nil {
		t.Fatal(err)
	}
	obs := func(cur int, queue float64) recommend.Observation {
		return recommend.Observation{Current: cur, Running: 0, Waiting: queue, Held: math.NaN(), KV: math.NaN(), CPU: math.NaN(), TTFT: math.NaN()}
	}
	var st recommend.State
	recommend.Decide(p, obs(1, 12), &st, at(1000))
	d := recommend.Decide(p, obs(3, 4), &st, at(1015))
	path := filepath.Join(t.TempDir(), "chat.json")
	if err := Write(path, File{Desired: d.Desired, Current: 3, State: st, SavedAt: at(1015)}); err != nil {
		t.Fatal(err)
	}
	back, err := Read(path)
	if err != nil {
		data, _ := os.ReadFile(path)
		t.Fatalf("Read: %v\n%s", err, data)
	}
	// Recommendations: the current 1 recorded at the first decision (the
	// HPA's recordInitialRecommendation), then 3 at 1000 and 1 at 1015.
	if back.Version != Version || back.Desired != 3 || back.Current != 3 || back.State.LastDesired != 3 ||
		len(back.State.Recommendations) != 3 || !back.State.LastAt.Equal(at(1015)) || !back.SavedAt.Equal(at(1015)) {
		t.Errorf("decoded %+v", back)
	}
	// The bare State (decide's form before the envelope) still reads.
	data, _ := json.Marshal(&st)
	if f, err := Decode(data, "old.json"); err != nil || f.Version != 0 || f.Desired != 3 || f.Current != -1 {
		t.Errorf("bare state: %+v %v", f, err)
	}
}

// A key given twice is refused (encoding/json keeps the last one: a state
// file with "desired":5,"desired":1 exported 1), in the envelope and in
// the state, at the second key.
func TestDecodeDuplicateKeys(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		// `{"version":1,"desired":5,` is 25 characters: the second key at 26.
		{`{"version":1,"desired":5,"desired":1,"current":-1,"state":{},"saved_at":"1970-01-01T00:16:40Z"}`, "f.json: line 1:26: desired: key given twice"},
		// `{"version":1,"desired":1,"state":{"last_desired":2,` is 51 characters.
		{`{"version":1,"desired":1,"state":{"last_desired":2,"last_desired":1}}`, "line 1:52: state.last_desired: key given twice"},
		{`{"last_desired":2,"last_desired":1}`, "line 1:19: last_desired: key given twice"},
	} {
		if _, err := Decode([]byte(tc.doc), "f.json"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.doc, err, tc.want)
		}
	}
}

// TestDecodeSyntaxPosition: a malformed value is placed at its own byte
// (the decoder counted from where the value's read began: the x below
// was put at 2:9, the N at 3:4). Columns by hand: `  "version": ` and
// `  "targets": ` are 13 bytes, the value at 14.
func TestDecodeSyntaxPosition(t *testing.T) {
	for _, tc := range []struct{ doc, want string }{
		{"{\n  \"version\": x\n}\n", "f.json: line 2:14: invalid character 'x' looking for beginning of value"},
		{"{\n  \"version\": 1,\n  \"targets\": NaN\n}\n", "f.json: line 3:14: invalid character 'N' looking for beginning of value"},
	} {
		if _, err := Decode([]byte(tc.doc), "f.json"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.doc, err, tc.want)
		}
	}
}

// The envelope's own bounds and keys.
func TestDecodeEnvelope(t *testing.T) {
	for doc, want := range map[string]string{
		`{"version":2,"desired":1,"state":{}}`:                  "line 1:12: version: 2: written by a newer infscale (this one reads version 1): run the infscale that wrote it",
		`{"version":0,"desired":1,"state":{}}`:                  "line 1:12: version: unknown version 0 (want 1)",
		`{"version":1,"desired":99999999999,"state":{}}`:        "desired: 99999999999: want 0..2147483647",
		`{"version":1,"desired":1,"current":-2,"state":{}}`:     "current: -2: want -1 (unknown) or 0..2147483647",
		`{"version":1,"state":{}}`:                              `no "desired"`,
		`{"version":1,"desired":1}`:                             `no "state" object`,
		`{"version":1,"desired":1,"state":{},"bogus":1}`:        `unknown key "bogus"`,
		`{"version":1,"desired":1,"state":{"last_desired":-1}}`: "state.last_desired: -1 must be in 0..2147483647",
	} {
		if _, err := Decode([]byte(doc), "f.json"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", doc, err, want)
		}
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
		// `{"ramps": [{"at": "1970-01-01T00:16:40Z", "rate": 1, "seen": ` is 61 characters:
		// "{" 1, "ramps" 2..8, ": [{" 9..12, "at" 13..16, ": " 17..18, the time 19..40,
		// ", " 41..42, "rate" 43..48, ": 1, " 49..53, "seen" 54..59, ": " 60..61.
		// The same 61 characters, then NaN (as Go prints it) at column 62.
		{"NaN", `{"ramps": [{"at": "1970-01-01T00:16:40Z", "rate": 1, "seen": NaN}]}`,
			[]string{"st.json: line 1:62: ramps[0].seen: NaN is not a JSON number (want a finite number)"}},
		{"-Inf", `{"demand": [{"at": "1970-01-01T00:16:40Z", "demand": -Inf}]}`, []string{"demand[0].demand: -Inf is not a JSON number"}},
		{"float out of range", `{"ramps": [{"at": "1970-01-01T00:16:40Z", "rate": 1, "seen": 1e400}]}`,
			[]string{"st.json: line 1:62: ramps[0].seen: 1e400: out of range of a 64-bit float"}},
		{"syntax", "{\n  \"recommendations\": [1,\n", []string{"st.json: line 2:23: recommendations[0]: want an object, got 1"}},
		{"truncated", `{"last_desired": 3`, []string{"st.json: line 1:19: unexpected end"}},
		{"two objects", `{} {}`, []string{"line 1:4: data after the JSON object"}},
		{"array", `[]`, []string{"line 1:1: the state: want an object, got an array"}},
		{"empty", "\n", []string{"st.json: empty"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st, err := decodeState([]byte(tc.doc), "st.json")
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
	_, err := decodeState([]byte(`{"last_desired": -1, "scale_down_events": [{"at": "1970-01-01T00:16:40Z", "change": 0}]}`), "st.json")
	if err == nil || !strings.Contains(err.Error(), "last_desired: -1") || !strings.Contains(err.Error(), "scale_down_events[0].change: 0") {
		t.Errorf("error %v, want both problems", err)
	}
}

// FuzzDecode: any bytes decode or give an error naming the file; a file
// that decodes is within its bounds and its state is valid.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(`{"recommendations":[{"at":"1970-01-01T00:16:40Z","replicas":3}],"last_desired":3,"last_at":"1970-01-01T00:16:40Z"}`))
	f.Add([]byte(`{"demand":[{"at":"x","demand":-1}],"foo":[1,{"a":2}]}`))
	f.Add([]byte(`{"scale_up_events":{"at":1}}`))
	f.Add([]byte(`{"version":1,"desired":5,"desired":1,"current":-1,"state":{},"saved_at":"1970-01-01T00:16:40Z"}`))
	f.Add([]byte(`{"version":1,"desired":2,"current":1,"state":{"last_desired":2,"last_at":"1970-01-01T00:16:40Z"},"saved_at":"1970-01-01T00:16:40Z"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Decode(data, "f.json")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "f.json") {
				t.Fatalf("error %q does not name the file", err)
			}
			return
		}
		if file.Desired < 0 || file.Desired > MaxReplicas || file.Current < -1 || file.Current > MaxReplicas {
			t.Fatalf("decoded out of bounds: %+v", file)
		}
		if err := file.State.Validate(); err != nil {
			t.Fatalf("decoded an invalid state: %v", err)
		}
	})
}

// An open dip (a pointer to a struct) and a dip's missed (a bool) read
// back as written; the walker took the pointer for a scalar and refused
// the file ("data after the JSON object").
func TestDecodeOpenDip(t *testing.T) {
	doc := `{"version":1,"desired":1,"current":5,"state":{"last_desired":1,"last_at":"1970-01-01T00:16:55Z",` +
		`"dips":[{"at":"1970-01-01T00:10:00Z","seconds":30,"returned":true,"back":5,"from":5,"floor":1,"missed":true}],` +
		`"open_dip":{"at":"1970-01-01T00:16:55Z","from":5,"floor":1}},"saved_at":"1970-01-01T00:16:55Z"}`
	f, err := Decode([]byte(doc), "s.json")
	if err != nil {
		t.Fatal(err)
	}
	if d := f.State.OpenDip; d == nil || !d.At.Equal(at(1015)) || d.From != 5 || d.Floor != 1 {
		t.Errorf("open_dip %+v, want at 1015 s, from 5, floor 1", d)
	}
	if len(f.State.Dips) != 1 || !f.State.Dips[0].Missed {
		t.Errorf("dips %+v, want one, missed", f.State.Dips)
	}
	// Its lows (each new low and when it was reached) read back too, and a
	// low above the one before is refused with its path.
	lows := `"open_dip":{"at":"1970-01-01T00:16:00Z","from":5,"floor":1,"lows":[{"at":"1970-01-01T00:16:00Z","floor":3},{"at":"1970-01-01T00:16:30Z","floor":1}]}`
	f, err = Decode([]byte(strings.Replace(doc, `"open_dip":{"at":"1970-01-01T00:16:55Z","from":5,"floor":1}`, lows, 1)), "s.json")
	if err != nil {
		t.Fatal(err)
	}
	if d := f.State.OpenDip; d == nil || len(d.Lows) != 2 || !d.Lows[1].At.Equal(at(990)) || d.Lows[1].Floor != 1 {
		t.Errorf("open_dip %+v, want lows 3 at 960 s and 1 at 990 s", d)
	}
	bad := strings.Replace(lows, `"floor":1}]`, `"floor":4}]`, 1)
	if _, err := Decode([]byte(strings.Replace(doc, `"open_dip":{"at":"1970-01-01T00:16:55Z","from":5,"floor":1}`, bad, 1)), "s.json"); err == nil || !strings.Contains(err.Error(), "open_dip.lows[1].floor") {
		t.Errorf("a low above the one before: %v, want an error naming open_dip.lows[1].floor", err)
	}
}

// TestDecodeNewerVersion: a file a newer infscale wrote, with a key this
// one does not know, is one error naming its version at its position
// (line 1:12), not an unknown key: the version is why.
func TestDecodeNewerVersion(t *testing.T) {
	doc := `{"version":3,"desired":3,"current":1,"state":{},"saved_at":"1970-01-01T00:16:40Z","shards":[1]}`
	_, err := Decode([]byte(doc), "f.json")
	want := "f.json: line 1:12: version: 3: written by a newer infscale (this one reads version 1)"
	if err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "shards") {
		t.Errorf("%v, want %q alone", err, want)
	}
}
