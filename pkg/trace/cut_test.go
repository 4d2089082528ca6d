package trace

import (
	"context"
	"strings"
	"testing"
)

// TestCutLastRow: a trace file cut while being written ends in a partial
// row without a line end. In every format the row is refused at its
// file:line, as any bad row, and the error says the line is the last one,
// without a line end (was the file cut?); the same partial row ended by a
// line end, before other rows, is the plain row error. A complete last row
// without a line end (as editors save) is read.
func TestCutLastRow(t *testing.T) {
	const burst = BurstGPTHeader + "\n5,ChatGPT,472,18,490,Conversation log\n"
	const moon = `{"timestamp": 0, "input_length": 10, "output_length": 5}` + "\n"
	for _, c := range []struct {
		name, body, want string
	}{
		// Fewer fields: the cut fell inside the row.
		{"generic.csv", GenericHeader + "\n0,512,128\n1.5,51", `generic.csv:3: want 3 fields arrival_s,prompt_tokens,output_tokens, got 2: "1.5,51"`},
		{"plain.csv", "0,512,128\n1.5,512,", `plain.csv:2: output_tokens "": want an integer 0..2147483647`},
		{"quoted.csv", "0,512,128\n\"1.5\",\"51", `quoted.csv:2: a quoted field is not closed on its line`},
		{"azure.csv", AzureHeader + "\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.5", `azure.csv:3: want 3 fields TIMESTAMP,ContextTokens,GeneratedTokens, got 1`},
		{"burst.csv", burst + "45,ChatGPT,1087,2", `burst.csv:3: want 6 fields as the header's columns, got 4`},
		{"moon.jsonl", moon + `{"timestamp": 1, "input_len`, `moon.jsonl:2: want a JSON object {"timestamp": ms, "input_length": n, "output_length": n}: unexpected end of JSON input`},
		// A multi-byte character cut in half.
		{"utf8.csv", "0,512,128\n1,2,3 \xc3", `utf8.csv:2: a NUL byte or invalid UTF-8`},
	} {
		for _, ended := range []bool{false, true} {
			body := c.body
			if ended { // the partial row ended, then a complete row again
				rows := strings.SplitAfter(c.body, "\n")
				body += "\n" + rows[len(rows)-2]
			}
			_, _, err := Check(context.Background(), mustParse(t, writeFile(t, c.name, body)))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s (line end %v): err = %v, want it to contain %q", c.name, ended, err, c.want)
				continue
			}
			const hint = "(the file's last line, with no line end: was the file cut while being written? wait for it to be complete, or delete the partial row)"
			if got := strings.HasSuffix(err.Error(), hint); got == ended {
				t.Errorf("%s (line end %v): err = %v; want the cut note %v", c.name, ended, err, !ended)
			}
		}
	}
	// Complete last rows without a line end: 2 requests each.
	for name, body := range map[string]string{
		"generic.csv": "0,512,128\n1.5,512,128",
		"azure.csv":   AzureHeader + "\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.5,10,2",
		"burst.csv":   burst + "45,ChatGPT,1087,2,1089,Conversation log",
		"moon.jsonl":  moon + `{"timestamp": 1, "input_length": 10, "output_length": 5}`,
	} {
		if got := readAll(t, mustParse(t, writeFile(t, name, body))); len(got) != 2 {
			t.Errorf("%s: %d requests, want 2", name, len(got))
		}
	}
}

func mustParse(t *testing.T, p string) Source {
	t.Helper()
	s, err := Parse(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestBinaryLastLineNotCut: a binary or compressed file whose last line
// has no line end (a gzip file, a NUL or a byte invalid mid-line) is said
// to be binary, without the cut note beside it: "decompress it first" and
// "was the file cut? wait for it to be complete" were both advised. Only a
// character cut in half at the end (TestCutLastRow's utf8.csv) is a cut.
func TestBinaryLastLineNotCut(t *testing.T) {
	for name, body := range map[string]string{
		"gz.csv":     "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03\xca\x48",
		"nul.csv":    "0,512,128\n1,2,3\x00",
		"mid.jsonl":  `{"timestamp": 0, "input_length": 10, "output_length": 5}` + "\n\xff{\"timestamp\": 1}",
		"nulcut.csv": "0,512,128\n1,2\x00,3 \xc3",
	} {
		_, _, err := Check(context.Background(), mustParse(t, writeFile(t, name, body)))
		if err == nil || !strings.Contains(err.Error(), "a NUL byte or invalid UTF-8") {
			t.Errorf("%s: err = %v, want a NUL byte or invalid UTF-8", name, err)
			continue
		}
		if strings.Contains(err.Error(), "was the file cut") {
			t.Errorf("%s: err = %v; want no cut note on a binary line", name, err)
		}
	}
}
