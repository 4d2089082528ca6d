package trace

import (
	"context"
	"strings"
	"testing"
)

// TestMooncakeKeysOnce: encoding/json kept the last of a key given twice
// ({"input_length": 10, "input_length": 99999} replayed a 99,999-token
// prompt) and read "Input_Length" as "input_length". A row with a key
// given twice is refused at its file:line with both columns (counted by
// hand: 1-based bytes of the line), as a calibration file's is; a case
// variant of a key the row is read by is refused naming the exact one.
func TestMooncakeKeysOnce(t *testing.T) {
	const ok = `{"timestamp": 0, "input_length": 5, "output_length": 1}` + "\n"
	for _, c := range []struct{ name, row, want string }{
		// '{' is column 1, "timestamp" 2-12, "input_length" 18-31, the
		// second one 38.
		{"twice.jsonl", `{"timestamp": 1, "input_length": 10, "input_length": 99999, "output_length": 5}`,
			"twice.jsonl:2: column 38: input_length: key given twice (first at column 18); give it once"},
		// Then "output_length" is 38-52, "timestamp" again 58, and a
		// "hash_ids" after it 58-67, the second 75.
		{"ts.jsonl", `{"timestamp": 1, "input_length": 10, "output_length": 5, "timestamp": 0}`,
			"ts.jsonl:2: column 58: timestamp: key given twice (first at column 2)"},
		// A key the reader does not read, given twice, too.
		{"hash.jsonl", `{"timestamp": 1, "input_length": 10, "output_length": 5, "hash_ids": [1], "hash_ids": [2]}`,
			"hash.jsonl:2: column 75: hash_ids: key given twice (first at column 58)"},
		// The same key spelt with an escape is the same key.
		{"escaped.jsonl", `{"timestamp": 1, "input_length": 10, "input\u005flength": 99999, "output_length": 5}`,
			"escaped.jsonl:2: column 38: input_length: key given twice (first at column 18)"},
		{"case.jsonl", `{"timestamp": 1, "Input_Length": 10, "output_length": 5}`,
			`case.jsonl:2: key "Input_Length": the names are exact: write "input_length"`},
		{"type.jsonl", `{"timestamp": 1, "input_length": "10", "output_length": 5}`,
			"type.jsonl:2: input_length: a JSON string: want an integer"},
		{"after.jsonl", `{"timestamp": 1, "input_length": 10, "output_length": 5} {}`,
			`after.jsonl:2: want a JSON object {"timestamp": ms, "input_length": n, "output_length": n}: data after the object: "{}"`},
	} {
		_, _, err := Check(context.Background(), mustParse(t, writeFile(t, c.name, ok+c.row+"\n")))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to contain %q", c.name, err, c.want)
		}
	}
	// Other keys, nested objects and nulls in them are read past.
	got := readAll(t, mustParse(t, writeFile(t, "more.jsonl", ok+`{"hash_ids": [1, 2], "meta": {"a": null, "b": [{}]}, "timestamp": 1500, "input_length": 7, "output_length": 3}`+"\n")))
	if len(got) != 2 || got[1] != (Request{Arrival: 1.5, Prompt: 7, Output: 3}) {
		t.Errorf("rows %+v, want the second at 1.5 s, 7 and 3 tokens", got)
	}
}
