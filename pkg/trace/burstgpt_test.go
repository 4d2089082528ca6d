package trace

import (
	"context"
	"io"
	"math"
	"strings"
	"testing"
)

// burstgptRows are four requests of a small BurstGPT trace, written by
// hand in the header's column order: a failed request logged without
// lengths (Request tokens 0) at 10 s, and an API call at 10 s whose
// response is 0 tokens.
const burstgptRows = "3,ChatGPT,200,50,250,Conversation log\n" +
	"10,GPT-4,1000,0,1000,API log\n" +
	"10,ChatGPT,0,0,0,Conversation log\n" +
	"62,ChatGPT,35,400,435,Conversation log\n"

// burstgptWant are burstgptRows' requests, worked out by hand: arrivals
// are the Timestamps as they are (seconds since the trace's start, not
// shifted to the first row), the 0-token response is served as 1 token,
// the row with Request tokens 0 is skipped.
var burstgptWant = []Request{{3, 200, 50}, {10, 1000, 1}, {62, 35, 400}}

// readSkipped reads one pass of s and returns its requests and the rows
// it skipped.
func readSkipped(t *testing.T, s Source) ([]Request, int64) {
	t.Helper()
	r, err := s.Open()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var out []Request
	for {
		q, err := r.Next()
		if err == io.EOF {
			return out, SkippedRows(r)
		}
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, q)
	}
}

func sameRequests(t *testing.T, what string, got, want []Request) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %+v, want %+v", what, got, want)
	}
	for i, w := range want {
		if q := got[i]; math.Abs(q.Arrival-w.Arrival) > 1e-9 || q.Prompt != w.Prompt || q.Output != w.Output {
			t.Errorf("%s: request %d = %+v, want %+v", what, i+1, q, w)
		}
	}
}

// TestBurstGPT: a BurstGPT file is detected by its header, in the
// published column order or another, quoted or not (CRLF, byte order
// mark), or forced with burstgpt: whatever its name.
func TestBurstGPT(t *testing.T) {
	reordered := "Log Type,Timestamp,Request tokens,Response tokens,Total tokens,Model\n" +
		"Conversation log,3,200,50,250,ChatGPT\n" +
		"\"API log\",10,1000,0,1000,GPT-4\n" +
		"Conversation log,10,0,0,0,ChatGPT\n" +
		"Conversation log, 62 ,35,\"400\",435,ChatGPT\n"
	excel := "\xef\xbb\xbf\"Timestamp\",\"Model\",\"Request tokens\",\"Response tokens\",\"Total tokens\",\"Log Type\"\r\n" +
		strings.ReplaceAll(burstgptRows, "\n", "\r\n")
	for spec, body := range map[string]string{
		"BurstGPT_1.csv":   BurstGPTHeader + "\n" + burstgptRows,
		"reordered.csv":    reordered,
		"excel.csv":        excel,
		"burstgpt:log.txt": BurstGPTHeader + "\n" + burstgptRows,
		// A later release's columns beside the six, not read.
		"sessions.csv": "Session ID," + BurstGPTHeader + ",Elapsed time\n" +
			"s1,3,ChatGPT,200,50,250,Conversation log,1.5\n" +
			"s2,10,GPT-4,1000,0,1000,API log,0\n" +
			"s3,10,ChatGPT,0,0,0,Conversation log,0\n" +
			"s1,62,ChatGPT,35,400,435,Conversation log,9.25\n",
	} {
		name, forced := strings.CutPrefix(spec, "burstgpt:")
		path := writeFile(t, name, body)
		if forced {
			path = "burstgpt:" + path
		}
		src, err := Parse(path, Options{})
		if err != nil {
			t.Fatalf("%s: %v", spec, err)
		}
		got, skipped := readSkipped(t, src)
		sameRequests(t, spec, got, burstgptWant)
		if skipped != 1 {
			t.Errorf("%s: skipped %d rows, want 1 (Request tokens 0)", spec, skipped)
		}
	}
}

// TestBurstGPTWindowSort: --window cuts the file's own seconds (the
// Timestamps), the skip count sees through it, and rows out of order are
// refused at their line unless sorted.
func TestBurstGPTWindowSort(t *testing.T) {
	path := writeFile(t, "w.csv", BurstGPTHeader+"\n"+burstgptRows)
	// [5, 60): the request at 10 s only (the skipped row at 10 s is
	// counted), shifted to 10-5 = 5 s; the one at 62 s ends the window.
	src, err := Parse(path, Options{WindowStart: 5, WindowEnd: 60})
	if err != nil {
		t.Fatal(err)
	}
	got, skipped := readSkipped(t, src)
	sameRequests(t, "window", got, []Request{{5, 1000, 1}})
	if skipped != 1 {
		t.Errorf("window: skipped %d, want 1", skipped)
	}
	// Rate scale 2 first: arrivals 1.5, 5, 31; then [5, 60) keeps 5 and
	// 31, shifted to 0 and 26.
	src, err = Parse(path, Options{WindowStart: 5, WindowEnd: 60, RateScale: 2})
	if err != nil {
		t.Fatal(err)
	}
	got, skipped = readSkipped(t, src)
	sameRequests(t, "scaled window", got, []Request{{0, 1000, 1}, {26, 35, 400}})
	if skipped != 1 {
		t.Errorf("scaled window: skipped %d, want 1", skipped)
	}

	unordered := BurstGPTHeader + "\n" +
		"10,GPT-4,1000,7,1007,API log\n" +
		"3,ChatGPT,200,50,250,Conversation log\n"
	path = writeFile(t, "unordered.csv", unordered)
	src, err = Parse(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Check(context.Background(), src); err == nil || !strings.Contains(err.Error(), "unordered.csv:3: timestamp 3 s is before the previous row's 10 s") {
		t.Errorf("unordered: err = %v", err)
	}
	src, err = Parse(path, Options{Sort: true})
	if err != nil {
		t.Fatal(err)
	}
	sameRequests(t, "sorted", readAll(t, src), []Request{{3, 200, 50}, {10, 1000, 7}})
	// Sorted keeps the count of the rows skipped: the 0-token row at 4 s.
	path = writeFile(t, "unordered-skip.csv", unordered+"4,GPT-4,0,0,0,API log\n")
	if src, err = Parse(path, Options{Sort: true}); err != nil {
		t.Fatal(err)
	}
	got, skipped = readSkipped(t, src)
	sameRequests(t, "sorted with a skip", got, []Request{{3, 200, 50}, {10, 1000, 7}})
	if skipped != 1 {
		t.Errorf("sorted with a skip: skipped %d, want 1", skipped)
	}

	// A skipped row out of order is refused too: the file is out of order.
	path = writeFile(t, "unordered0.csv", BurstGPTHeader+"\n10,GPT-4,1000,7,1007,API log\n9,GPT-4,0,0,0,API log\n")
	src, err = Parse(path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := Check(context.Background(), src); err == nil || !strings.Contains(err.Error(), "unordered0.csv:3: timestamp 9 s is before") {
		t.Errorf("unordered0: err = %v", err)
	}
}

// TestBurstGPTErrors: a bad header or row is refused naming the file, the
// line and what is wrong.
func TestBurstGPTErrors(t *testing.T) {
	const row = "3,ChatGPT,200,50,250,Conversation log\n"
	for name, c := range map[string]struct{ spec, body, want string }{
		"misspelt.csv": {"", "Timestamp,Model,Request Tokens,Response tokens,Total tokens,Log Type\n" + row,
			`misspelt.csv:1: header: no column "Request tokens" (found "Request Tokens": the names are case-sensitive): want the header ` + BurstGPTHeader},
		// All lower case was read as a generic CSV ("want 3 fields
		// arrival_s,..."): a case slip is a BurstGPT near miss too.
		"lower.csv": {"", "timestamp,model,request tokens,response tokens,total tokens,log type\n" + row,
			`lower.csv:1: header: no column "Timestamp" (found "timestamp": the names are case-sensitive)`},
		"typo.csv": {"", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Typ\n" + row,
			`typo.csv:1: header: no column "Log Type": want`},
		"missing.csv": {"", "Timestamp,Model,Request tokens,Response tokens,Log Type\n3,ChatGPT,200,50,Conversation log\n",
			`missing.csv:1: header: no column "Total tokens"`},
		"twice.csv": {"", "Timestamp,Model,Request tokens,Response tokens,Total tokens,Timestamp\n" + row,
			`twice.csv:1: header: column "Timestamp" twice`},
		"extra.csv": {"", BurstGPTHeader + ",Session ID\n3,ChatGPT,200,50,250,Conversation log,7\n4,ChatGPT,200,50,250,Conversation log\n",
			`extra.csv:3: want 7 fields as the header's columns, got 6`},
		"generic.csv":  {"burstgpt:", "0.5,100,10\n", `generic.csv:1: header: no column "Timestamp"`},
		"empty.csv":    {"burstgpt:", "", "empty.csv:1: want the header " + BurstGPTHeader + ", found an empty file"},
		"blankhd.csv":  {"burstgpt:", "\n" + BurstGPTHeader + "\n" + row, "blankhd.csv:2: header"},
		"float.csv":    {"", BurstGPTHeader + "\n" + row + "5,ChatGPT,12.5,50,62,Conversation log\n", `float.csv:3: Request tokens "12.5": want an integer 1..2147483647`},
		"resp.csv":     {"", BurstGPTHeader + "\n" + row + "5,ChatGPT,12,many,62,Conversation log\n", `resp.csv:3: Response tokens "many": want an integer 0..2147483647`},
		"resp0.csv":    {"", BurstGPTHeader + "\n" + row + "5,ChatGPT,0,-1,0,Conversation log\n", `resp0.csv:3: Response tokens "-1": want an integer 0..2147483647`},
		"negreq.csv":   {"", BurstGPTHeader + "\n" + row + "5,ChatGPT,-5,50,45,Conversation log\n", `negreq.csv:3: Request tokens "-5": want an integer 1..2147483647`},
		"thousand.csv": {"", BurstGPTHeader + "\n" + row + "5,ChatGPT,\"1,087\",50,1137,Conversation log\n", `thousand.csv:3: Request tokens "1,087": want an integer 1..2147483647 (without a thousands separator`},
		"negts.csv":    {"", BurstGPTHeader + "\n-1,ChatGPT,200,50,250,Conversation log\n", `negts.csv:2: Timestamp "-1": want seconds >= 0 since the trace's start`},
		"badts.csv":    {"", BurstGPTHeader + "\n" + row + "2023-11-16,ChatGPT,200,50,250,Conversation log\n", `badts.csv:3: Timestamp "2023-11-16": want seconds >= 0`},
		"hexts.csv":    {"", BurstGPTHeader + "\n" + row + "0x1p3,ChatGPT,200,50,250,Conversation log\n", `hexts.csv:3: Timestamp "0x1p3": want seconds >= 0 since the trace's start (decimal digits`},
		"ragged.csv":   {"", BurstGPTHeader + "\n" + row + "5,ChatGPT,200,50,250\n", `ragged.csv:3: want 6 fields as the header's columns, got 5`},
		"binary.csv":   {"", BurstGPTHeader + "\n" + row + "5,ChatGPT,200,50,250,\x00\n", "binary.csv:3: a NUL byte or invalid UTF-8"},
	} {
		src, err := Parse(c.spec+writeFile(t, name, c.body), Options{})
		if err == nil {
			_, _, err = Check(context.Background(), src)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v\nwant it to contain %s", name, err, c.want)
		}
	}
}
