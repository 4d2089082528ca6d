package trace

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/infscale/infscale/internal/sharedtest"
)

// testdata returns ../shared/testdata/traces/name beside the repository, or
// skips when the shared folder is absent (fails under CI=true).
func testdata(t testing.TB, name string) string {
	t.Helper()
	return sharedtest.Path(t, "traces", name)
}

func readAll(t *testing.T, s Source) []Request {
	t.Helper()
	out, _ := readSkipped(t, s)
	return out
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestAzureConversationTrace(t *testing.T) {
	src, err := Parse(testdata(t, "azure-llm-2023-conv.csv"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	reqs := readAll(t, src)
	// README: 19,366 rows over 3,502 s (18:15:46 to 19:14:08), mean prompt
	// 1,154.7 and output 211.1 tokens.
	if len(reqs) != 19366 {
		t.Fatalf("rows = %d, want 19366", len(reqs))
	}
	// First row 18:15:46.6805900, last 19:14:08.4025270: 58 min 21.7219370 s = 3501.721937 s.
	if got := reqs[len(reqs)-1].Arrival; math.Abs(got-3501.721937) > 1e-6 {
		t.Errorf("last arrival = %.7f s, want 3501.721937", got)
	}
	// Row 2: 18:15:50.9951690 - 18:15:46.6805900 = 4.314579 s, 396 / 109 tokens.
	if q := reqs[1]; math.Abs(q.Arrival-4.314579) > 1e-6 || q.Prompt != 396 || q.Output != 109 {
		t.Errorf("row 2 = %+v, want 4.314579 s, 396, 109", q)
	}
	var p, o float64
	for _, q := range reqs {
		p += float64(q.Prompt)
		o += float64(q.Output)
	}
	if mp, mo := p/19366, o/19366; math.Abs(mp-1154.7) > 0.05 || math.Abs(mo-211.1) > 0.05 {
		t.Errorf("means = %.2f / %.2f, want 1154.7 / 211.1 (README)", mp, mo)
	}
}

func TestMooncakeTrace(t *testing.T) {
	src, err := Parse(testdata(t, "mooncake-synthetic.jsonl"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	reqs := readAll(t, src)
	// README: 3,993 rows; first row timestamp 0 ms, 40160 in, 6 out; third 40 ms.
	if len(reqs) != 3993 {
		t.Fatalf("rows = %d, want 3993", len(reqs))
	}
	if q := reqs[0]; q.Arrival != 0 || q.Prompt != 40160 || q.Output != 6 {
		t.Errorf("row 1 = %+v", q)
	}
	if q := reqs[2]; q.Arrival != 0.040 || q.Prompt != 23769 || q.Output != 3 {
		t.Errorf("row 3 = %+v", q)
	}
	// Last row: timestamp 1022025 ms.
	if got := reqs[len(reqs)-1].Arrival; got != 1022.025 {
		t.Errorf("last arrival = %v, want 1022.025", got)
	}
}

func TestGenericCSV(t *testing.T) {
	p := writeFile(t, "t.csv", GenericHeader+"\n0,100,10\n0.5,200,0\n\n# comment\n2,300,30\n")
	src, err := Parse(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := readAll(t, src)
	want := []Request{{0, 100, 10}, {0.5, 200, 1}, {2, 300, 30}} // output 0 is served as 1 token
	if len(got) != len(want) {
		t.Fatalf("got %v", got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("row %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

func TestBadRows(t *testing.T) {
	cases := []struct {
		name, body, want string
	}{
		{"fields.csv", "0,1,1\n1,2\n", "fields.csv:2: want 3 fields"},
		{"quotedempty.csv", GenericHeader + "\n\"\",\"\",\"\"\n", `quotedempty.csv:2: arrival_s "": want a finite number`},
		// Line ends of CR alone (classic Mac OS) made the file one line
		// ("want 3 fields, got 7", with the cut note); said as such.
		{"cr.csv", "0,1,1\r1,1,1\r2,1,1\r", `cr.csv:1: want 3 fields arrival_s,prompt_tokens,output_tokens, got 7: "0,1,1\r1,1,1\r2,1,1" (the line holds a carriage return (CR): line ends of CR alone, as classic Mac OS wrote? convert them to LF or CRLF)`},
		{"cr.jsonl", `{"timestamp": 0, "input_length": 5, "output_length": 1}` + "\r" + `{"timestamp": 1, "input_length": 5, "output_length": 1}` + "\r", "(the line holds a carriage return (CR): line ends of CR alone"},
		// Seconds are decimal, as token counts are: Go's hex floats and
		// digit separators were read (0x1p3 as 8 s, 1_0 as 10 s).
		{"hexfloat.csv", "0,1,1\n0x1p3,1,1\n", `hexfloat.csv:2: arrival_s "0x1p3": want a finite number of seconds >= 0 (decimal digits`},
		{"underscore.csv", "0,1,1\n1_0,1,1\n", `underscore.csv:2: arrival_s "1_0": want a finite number of seconds >= 0 (decimal digits`},
		{"arrival.csv", GenericHeader + "\nx,1,1\n", "arrival.csv:2: arrival_s \"x\""},
		{"prompt.csv", "0,0,1\n", "prompt.csv:1: prompt_tokens \"0\": want an integer 1..2147483647"},
		{"output.csv", "0,5,-1\n", "output.csv:1: output_tokens \"-1\""},
		{"unsorted.csv", "0,1,1\n5,1,1\n4,1,1\n", "unsorted.csv:3: timestamp 4 s is before the previous row's 5 s"},
		// Out of order in the file's own times: Mooncake's milliseconds
		// (it said "0.01 s is before the previous row's 0.1 s" of 10 and
		// 100), Azure's dates (its seconds count from the first row: a
		// row 6.68059 s before it read "-6.68059 s ... 0 s").
		{"moonunsorted.jsonl", "{\"timestamp\": 100, \"input_length\": 5, \"output_length\": 1}\n{\"timestamp\": 10, \"input_length\": 5, \"output_length\": 1}\n",
			"moonunsorted.jsonl:2: timestamp 10 ms is before the previous row's 100 ms: rows must be in arrival order (or pass --sort)"},
		{"azunsorted.csv", AzureHeader + "\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:40,374,44\n",
			"azunsorted.csv:3: timestamp 2023-11-16 18:15:40 is before the previous row's 2023-11-16 18:15:46.68059: rows must be in arrival order (or pass --sort)"},
		{"azunsorted2.csv", AzureHeader + "\n2023-11-16 18:15:40,374,44\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:46.5,374,44\n",
			"azunsorted2.csv:4: timestamp 2023-11-16 18:15:46.5 is before the previous row's 2023-11-16 18:15:46.68059: rows must be in arrival order (or pass --sort)"},
		{"azure.csv", AzureHeader + "\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15,1,1\n", "azure.csv:3: TIMESTAMP"},
		{"moon.jsonl", "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1}\n{\"timestamp\": 1}\n", `moon.jsonl:2: no "input_length"`},
		{"moonjson.jsonl", "not json\n", "moonjson.jsonl:1: want a JSON object"},
		{"moonnull.jsonl", "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1}\nnull\n", `moonnull.jsonl:2: want a JSON object {"timestamp": ms, "input_length": n, "output_length": n}, found "null"`},
		{"moonarr.jsonl", "[1, 2, 3]\n", "moonarr.jsonl:1: want a JSON object"},
		{"moonnots.jsonl", "{\"input_length\": 5, \"output_length\": 1}\n", `moonnots.jsonl:1: no "timestamp"`},
		{"moonnegts.jsonl", "{\"timestamp\": -1, \"input_length\": 5, \"output_length\": 1}\n", "moonnegts.jsonl:1: timestamp -1: want milliseconds >= 0"},
		// A count past int32 is refused with the range, as the CSV
		// formats name it (it said "want an integer >= 1" of 3000000000),
		// and with the value; so is one too large for any integer.
		{"moonbig.jsonl", "{\"timestamp\": 0, \"input_length\": 3000000000, \"output_length\": 1}\n", "moonbig.jsonl:1: input_length 3000000000: want an integer 1..2147483647"},
		{"moonnegin.jsonl", "{\"timestamp\": 0, \"input_length\": -3, \"output_length\": 1}\n", "moonnegin.jsonl:1: input_length -3: want an integer 1..2147483647"},
		{"moonnegout.jsonl", "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": -50}\n", "moonnegout.jsonl:1: output_length -50: want an integer 0..2147483647"},
		{"moonhuge.jsonl", "{\"timestamp\": 0, \"input_length\": 1e30, \"output_length\": 1}\n", "moonhuge.jsonl:1: input_length: a JSON number 1e30: want an integer 1..2147483647"},
		{"moonnoout.jsonl", "{\"timestamp\": 0, \"input_length\": 5}\n", `moonnoout.jsonl:1: no "output_length"`},
		// 2^31 does not fit a token count; the message says what does.
		{"big.csv", "0,2147483648,1\n", "big.csv:1: prompt_tokens \"2147483648\": want an integer 1..2147483647"},
		// A long garbage line is quoted by its first 60 bytes and its length.
		// A header with the columns in another order, or other names, is
		// named as a header (it was read as a row: arrival_s "prompt_tokens").
		{"order.csv", "prompt_tokens,arrival_s,output_tokens\n100,1,50\n", `order.csv:1: header "prompt_tokens,arrival_s,output_tokens": want arrival_s,prompt_tokens,output_tokens, those columns in that order (or no header)`},
		{"names.csv", "time,input,output\n1,100,50\n", `names.csv:1: header "time,input,output": want arrival_s,prompt_tokens,output_tokens`},
		// NaN is a number, refused as an arrival, not taken for a header.
		{"nan.csv", "NaN,1,1\n", `nan.csv:1: arrival_s "NaN": want a finite number of seconds >= 0`},
		// Binary (a gzipped trace): named as such at its line, in every
		// format, instead of its bytes quoted as a row.
		{"gz.csv", "\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03,1,1\n", "gz.csv:1: a NUL byte or invalid UTF-8: not a trace, which is text (CSV or JSON lines); a binary or compressed file? (decompress it first)"},
		{"bin.jsonl", "{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1}\n\xff\xfe\n", "bin.jsonl:2: a NUL byte or invalid UTF-8"},
		{"azbin.csv", AzureHeader + "\n2023-11-16 18:15:46.6805900,374,44\x00\n", "azbin.csv:2: a NUL byte or invalid UTF-8"},
		{"long.csv", strings.Repeat("x", 5000) + "\n", "long.csv:1: want 3 fields arrival_s,prompt_tokens,output_tokens, got 1: \"" + strings.Repeat("x", 60) + "\"... (5000 bytes)"},
	}
	for _, c := range cases {
		src, err := Parse(writeFile(t, c.name, c.body), Options{})
		if err == nil {
			_, _, err = Check(context.Background(), src)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to contain %q", c.name, err, c.want)
		}
	}
}

func TestEmpty(t *testing.T) {
	for _, body := range []string{"", GenericHeader + "\n", AzureHeader + "\n", `"TIMESTAMP","ContextTokens","GeneratedTokens"` + "\r\n", `"arrival_s","prompt_tokens","output_tokens"` + "\n"} {
		src, err := Parse(writeFile(t, "e.csv", body), Options{})
		if err == nil {
			_, _, err = Check(context.Background(), src)
		}
		if !errors.Is(err, ErrEmpty) {
			t.Errorf("%q: err = %v, want ErrEmpty", body, err)
		}
	}
}

func TestSortWindowScale(t *testing.T) {
	p := writeFile(t, "u.csv", "10,1,1\n0,2,2\n5,3,3\n20,4,4\n")
	src, err := Parse(p, Options{Sort: true, RateScale: 2, WindowStart: 2, WindowEnd: 6})
	if err != nil {
		t.Fatal(err)
	}
	// Sorted: 0,5,10,20; x2 compresses to 0,2.5,5,10; window [2,6) keeps
	// 2.5 and 5, shifted by -2: 0.5 and 3.
	got := readAll(t, src)
	if len(got) != 2 || got[0] != (Request{0.5, 3, 3}) || got[1] != (Request{3, 1, 1}) {
		t.Errorf("got %+v", got)
	}
	if src.Duration != 4 {
		t.Errorf("duration = %v, want 4", src.Duration)
	}
}

func TestReferenceTrace(t *testing.T) {
	// Expected count: 540 + 2970 + 10440 + 990 + 576 + 36 = 15552 (reference.go).
	if got := ReferenceShape.Expected(); got != 15552 {
		t.Fatalf("expected count = %v, want 15552", got)
	}
	reqs := readAll(t, Reference(1))
	// A Poisson count has standard deviation sqrt(15552) = 125; allow 4 sigma.
	if n := float64(len(reqs)); math.Abs(n-15552) > 500 {
		t.Errorf("count = %v, want 15552 +- 500", n)
	}
	var silent, hold int
	for i, q := range reqs {
		if i > 0 && q.Arrival < reqs[i-1].Arrival {
			t.Fatalf("arrival %d goes back in time", i)
		}
		if q.Arrival >= 960 && q.Arrival < 1320 {
			silent++
		}
		if q.Arrival >= 400 && q.Arrival < 700 {
			hold++
		}
		if q.Prompt < 192 || q.Prompt > 448 || q.Output < 64 || q.Output > 448 {
			t.Fatalf("request %d tokens %d/%d outside 192..448 / 64..448", i, q.Prompt, q.Output)
		}
	}
	if silent != 0 {
		t.Errorf("%d arrivals in the silence 960-1320 s", silent)
	}
	// 300 s at 30 req/s = 9000, sd 95.
	if math.Abs(float64(hold)-9000) > 400 {
		t.Errorf("hold 400-700 s has %d arrivals, want 9000 +- 400", hold)
	}
	// Same seed, same trace.
	again := readAll(t, Reference(1))
	if len(again) != len(reqs) || again[len(again)-1] != reqs[len(reqs)-1] {
		t.Errorf("seed 1 is not reproducible")
	}
}

func TestSyntheticSpec(t *testing.T) {
	s, err := ParseSynthetic("poisson,rate=30,duration=1h,prompt=100-200,output=50,seed=7", 1)
	if err != nil {
		t.Fatal(err)
	}
	if s.Rate != 30 || s.Duration != 3600 || s.Prompt != (Tokens{100, 200}) || s.Output != (Tokens{50, 50}) || s.Seed != 7 {
		t.Errorf("parsed %+v", s)
	}
	for spec, want := range map[string]string{
		"uniform":                 "field 1",
		"poisson,rate=0":          "field 2 rate",
		"poisson,rate=1,bogus=3":  "field 3 \"bogus\": unknown key",
		"poisson,duration=x":      "field 2 duration",
		"poisson,prompt=300-200":  "field 2 prompt",
		"poisson,rate=1,duration": "field 3",
	} {
		if _, err := ParseSynthetic(spec, 1); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want %q", spec, err, want)
		}
	}
	if d, err := ParseSeconds("7d"); err != nil || d != 604800 {
		t.Errorf("7d = %v, %v", d, err)
	}
}

// FuzzReaders: any file content reads to requests or fails with an error
// naming the file, never a panic; requests come in arrival order with a
// prompt of at least 1 token and an output of at least 1.
func FuzzReaders(f *testing.F) {
	f.Add("0,1,1\n1,2,3\n")
	f.Add(GenericHeader + "\n0.5,10,0\n")
	f.Add(AzureHeader + "\n2023-11-16 18:15:46.6805900,374,44\n")
	f.Add("{\"timestamp\": 0, \"input_length\": 5, \"output_length\": 1}\n")
	f.Add("\"TIMESTAMP\",\"ContextTokens\",\"GeneratedTokens\"\r\n\"2023-11-16 18:15:46.6805900\",\"374\",\"44\"\r\n")
	f.Add("0,\"1\"\"0\",1\n1,\"2,\n")
	f.Add(BurstGPTHeader + "\n3,ChatGPT,200,50,250,Conversation log\n9,GPT-4,0,0,0,API log\n")
	f.Add("Log Type,Timestamp,Request tokens,Response tokens,Total tokens,Model\r\n\"API log\",3,10,0,10,GPT-4\r\n")
	f.Fuzz(func(t *testing.T, body string) {
		dir := t.TempDir()
		for _, name := range []string{"f.csv", "f.jsonl"} {
			p := filepath.Join(dir, name)
			if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
				t.Fatal(err)
			}
			src, err := Parse(p, Options{})
			if err != nil {
				continue
			}
			r, err := src.Open()
			if err != nil {
				continue
			}
			last := math.Inf(-1)
			for {
				q, err := r.Next()
				if err != nil {
					if err != io.EOF && !strings.Contains(err.Error(), name) {
						t.Fatalf("error without the file name: %v", err)
					}
					break
				}
				if q.Arrival < last || q.Prompt < 1 || q.Output < 1 || math.IsNaN(q.Arrival) {
					t.Fatalf("bad request %+v after %v", q, last)
				}
				last = q.Arrival
			}
			r.Close()
		}
	})
}

// TestNotATraceFile: a directory is named as what it is, not as an empty
// trace.
func TestNotATraceFile(t *testing.T) {
	_, err := Parse(t.TempDir(), Options{})
	if err == nil || !strings.Contains(err.Error(), "is a directory") {
		t.Errorf("a directory: err = %v, want it to say it is a directory", err)
	}
}

// TestNonFiniteSpans: NaN and infinite spans are refused wherever a span is
// read (--window, synthetic duration=), instead of a replay that never ends.
func TestNonFiniteSpans(t *testing.T) {
	for _, v := range []string{"NaN", "Inf", "+Inf", "-Inf", "NaNd", "Infd"} {
		if s, err := ParseSeconds(v); err == nil {
			t.Errorf("ParseSeconds(%q) = %g, want an error", v, s)
		}
	}
	for _, w := range []string{"NaN:5", "0:Inf", "Inf", "NaN"} {
		if a, b, err := ParseWindow(w); err == nil {
			t.Errorf("ParseWindow(%q) = %g, %g, want an error", w, a, b)
		}
	}
	if _, err := ParseSynthetic("poisson,duration=NaN", 1); err == nil {
		t.Error("synthetic duration=NaN: want an error")
	}
}

// TestLineTooLong: a file without line breaks (/dev/zero, a binary) is an
// error at its first line once it passes MaxLine, not a line read into
// memory without end (/dev/zero ran out of memory).
func TestLineTooLong(t *testing.T) {
	p := writeFile(t, "zeros.csv", strings.Repeat("0", MaxLine+10))
	src, err := Parse(p, Options{})
	if err == nil {
		_, _, err = Check(context.Background(), src)
	}
	if err == nil || !strings.Contains(err.Error(), "zeros.csv:1: a line longer than 1048576 bytes") {
		t.Errorf("err = %v, want the line and the limit", err)
	}
}

// TestNotARegularFile: a device or a pipe (/dev/zero, /dev/stdin) can be
// read once, but each policy reads the trace in its own pass (/dev/zero ran
// out of memory; a piped /dev/stdin lost its header to format detection).
func TestNotARegularFile(t *testing.T) {
	if _, err := os.Stat("/dev/zero"); err != nil {
		t.Skip("no /dev/zero")
	}
	for _, spec := range []string{"/dev/zero", "csv:/dev/zero"} {
		if _, err := Parse(spec, Options{}); err == nil || !strings.Contains(err.Error(), "not a regular file (a pipe or a device)") {
			t.Errorf("%s: err = %v", spec, err)
		}
		// load, too, reads it twice (a check, then the replay), and has
		// no policies: the reason is said for every command.
		if _, err := Parse(spec, Options{}); err == nil || !strings.Contains(err.Error(), "a trace is read more than once (a pass per policy in simulate and tune; load's check, then its replay)") {
			t.Errorf("%s: err = %v; want the reason for load too", spec, err)
		}
	}
}

// TestByteOrderMark: a UTF-8 byte order mark before the header (spreadsheet
// exports) is skipped: the Azure header is still recognised and the
// generic header still skipped, with CRLF line ends. Two rows each.
func TestByteOrderMark(t *testing.T) {
	bom := "\xef\xbb\xbf"
	for name, body := range map[string]string{
		"generic.csv": bom + GenericHeader + "\r\n0,100,10\r\n1,100,10\r\n",
		"azure.csv":   bom + AzureHeader + "\r\n2023-11-16 18:15:46.6805900,374,44\r\n2023-11-16 18:15:50.9951690,396,109\r\n",
		// A JSON line has commas too: the BOM must not make it read as a CSV
		// under a .jsonl name.
		"mooncake.jsonl": bom + `{"timestamp": 0, "input_length": 100, "output_length": 10}` + "\n" + `{"timestamp": 1000, "input_length": 200, "output_length": 10}` + "\n",
	} {
		src, err := Parse(writeFile(t, name, body), Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := readAll(t, src); len(got) != 2 || got[0].Prompt < 100 {
			t.Errorf("%s: %+v, want 2 rows", name, got)
		}
	}
}

// TestStepAndDiurnal: the synthetic step and daily cycle have the expected
// counts (the integral of the rate, by hand) and reject bad fields.
func TestStepAndDiurnal(t *testing.T) {
	count := func(spec string) (n int, last float64) {
		t.Helper()
		src, err := Parse(spec, Options{Seed: 1})
		if err != nil {
			t.Fatal(err)
		}
		rd, _ := src.Open()
		for {
			q, err := rd.Next()
			if err != nil {
				break
			}
			n, last = n+1, q.Arrival
		}
		return n, last
	}
	// 600 s x 3 + 600 s x 25 + 600 s x 3 = 18,600 expected; Poisson's sd ~136.
	if n, last := count("synthetic:step"); math.Abs(float64(n)-18600) > 4*136 || last >= 1800 {
		t.Errorf("step: %d requests, last at %g; want about 18,600 within 1800 s", n, last)
	}
	// The cosine's mean over a day is (3 + 30) / 2 = 16.5 req/s: 1,425,600
	// a day; the quarter-hour chords change it by < 0.1%. One hour around
	// the peak (14:00) is close to 30 x 3600 = 108,000 minus the curvature.
	d := DefaultDiurnal
	if n := d.Shape().Expected(); math.Abs(n-1425600) > 0.001*1425600 {
		t.Errorf("diurnal expected %g, want about 1,425,600", n)
	}
	if r := d.Rate(14 * 3600); r != 30 {
		t.Errorf("diurnal rate at the peak %g, want 30", r)
	}
	if r := d.Rate(2 * 3600); math.Abs(r-3) > 1e-9 {
		t.Errorf("diurnal rate at the trough %g, want 3", r)
	}
	if n, _ := count("synthetic:diurnal,duration=1h,peakhour=0,trough=10,peak=10"); math.Abs(float64(n)-36000) > 4*190 {
		t.Errorf("flat diurnal: %d requests in an hour at 10 req/s, want about 36,000", n)
	}
	for spec, want := range map[string]string{
		"synthetic:step,at=2h":          "not before duration",
		"synthetic:step,high=-1":        "field 2 high",
		"synthetic:diurnal,peakhour=30": "peakhour=30",
		// Inverted, the "peak" hour was the quietest; trough=10,peak=10
		// (flat, above) stays valid.
		"synthetic:diurnal,trough=40,peak=30": "synthetic diurnal: trough=40 is above peak=30: want trough <= peak",
		"synthetic:diurnal,rate=3":            "unknown key",
		"synthetic:square":                    "poisson, step, diurnal or onoff",
	} {
		if _, err := Parse(spec, Options{}); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: error %v, want %q", spec, err, want)
		}
	}
}

// TestAmplifyBursts: a steady 60 s of 1 req/s then 60 s of 5 req/s, in
// 60 s windows: the first window sets the baseline (60), the second has
// 300 - 60 = 240 excess, so at k = 2 it gets 240 copies (300 requests with
// p = 0.8 each: 240 on average); the steady window gets none.
func TestAmplifyBursts(t *testing.T) {
	var reqs []Request
	for i := range 60 {
		reqs = append(reqs, Request{Arrival: float64(i), Prompt: 1, Output: 1})
	}
	for i := range 300 {
		reqs = append(reqs, Request{Arrival: 60 + float64(i)/5, Prompt: 1, Output: 1})
	}
	rd, err := AmplifyBursts(FromSlice("t", 120, reqs), 2, 60, 1).Open()
	if err != nil {
		t.Fatal(err)
	}
	var first, second int
	last := 0.0
	for {
		q, err := rd.Next()
		if err != nil {
			break
		}
		if q.Arrival < last {
			t.Fatalf("out of order at %g", q.Arrival)
		}
		last = q.Arrival
		if q.Arrival < 60 {
			first++
		} else {
			second++
		}
	}
	// 240 copies ~ Binomial(300, 0.8): sd ~6.9.
	if first != 60 || math.Abs(float64(second)-540) > 30 {
		t.Errorf("windows %d and %d requests; want 60 and about 540", first, second)
	}
}

// TestSyntheticRateRange: the error states both ends of rate=.
func TestSyntheticRateRange(t *testing.T) {
	for _, v := range []string{"0", "1e9", "-1", "x"} {
		_, err := ParseSynthetic("poisson,rate="+v, 1)
		if err == nil || !strings.Contains(err.Error(), `rate="`+v+`": want requests per second, more than 0 and less than 1e9`) {
			t.Errorf("rate=%s: %v", v, err)
		}
	}
	if _, err := ParseSynthetic("poisson,rate=5e6,duration=1", 1); err != nil {
		t.Errorf("rate=5e6: %v", err)
	}
}

// TestParseFileErrors: a path with no file says so in one line, without the
// catalogue of specs; a format prefix without a path says to add one; a
// word that is neither a file nor a spec gets the one-line catalogue.
func TestParseFileErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "missing.csv")
	for spec, want := range map[string]string{
		missing:              missing + ": no such file",
		"csv:" + missing:     missing + ": no such file",
		"azure:":             `trace "azure:": azure: takes the file's path after it, e.g. azure:trace.csv`,
		"referense":          "referense: no such file, nor a trace spec (want " + Formats + ")",
		"synthtic:poisson,r": `"synthtic:poisson,r": "synthtic:" is not a kind of trace, and no file has that name (want ` + Formats + ")",
	} {
		_, err := Parse(spec, Options{})
		if err == nil || err.Error() != want {
			t.Errorf("%s: %v\nwant %s", spec, err, want)
		}
		if strings.Contains(spec, "missing") && !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: %v is not fs.ErrNotExist", spec, err)
		}
	}
	if strings.Contains(Formats, "\n") || len(Formats) > 250 {
		t.Errorf("Formats is %d bytes: one short line wanted", len(Formats))
	}
}

// TestQuotedCSV: a CSV trace whose fields are quoted (a spreadsheet or
// database export: "TIMESTAMP","ContextTokens",...) reads as the same
// requests as the unquoted file, its format still detected from its
// header, with CRLF and a byte order mark, directly and through ReadAhead
// (the replay's path).
func TestQuotedCSV(t *testing.T) {
	// Worked out by hand: arrivals are seconds since 18:15:46.6805900;
	// 18:15:50.9951690 is 4.3145790 s later, 18:15:51.0000000 4.3194100 s;
	// an output of 0 is served as 1 token.
	azure := []Request{{0, 374, 44}, {4.314579, 396, 109}, {4.31941, 20, 1}}
	generic := []Request{{0.5, 100, 10}, {1, 200, 1}, {2, 300, 30}}
	for name, c := range map[string]struct {
		body string
		want []Request
	}{
		"plain.csv": {AzureHeader + "\n2023-11-16 18:15:46.6805900,374,44\n2023-11-16 18:15:50.9951690,396,109\n2023-11-16 18:15:51.0000000,20,0\n", azure},
		"azq.csv": {`"TIMESTAMP","ContextTokens","GeneratedTokens"` + "\n" +
			`"2023-11-16 18:15:46.6805900","374","44"` + "\n" +
			`"2023-11-16 18:15:50.9951690","396","109"` + "\n" +
			`"2023-11-16 18:15:51.0000000","20","0"` + "\n", azure},
		// Some fields quoted, CRLF and a byte order mark (Excel's "CSV UTF-8").
		"azq-excel.csv": {"\xef\xbb\xbf\"TIMESTAMP\",ContextTokens,\"GeneratedTokens\"\r\n" +
			"\"2023-11-16 18:15:46.6805900\",374,44\r\n" +
			"\"2023-11-16 18:15:50.9951690\",\"396\",109\r\n" +
			"\"2023-11-16 18:15:51.0000000\",20,\"0\"\r\n", azure},
		// The generic format: a quoted header skipped, quoted fields,
		// spaces around unquoted ones, a comment with a stray quote.
		"gq.csv": {`"arrival_s","prompt_tokens","output_tokens"` + "\n" +
			`"0.5","100","10"` + "\n" + `# an "odd quote in a comment` + "\n" +
			`1,"200",0` + "\n" + ` 2 ,"300", 30 ` + "\n", generic},
	} {
		src, err := Parse(writeFile(t, name, c.body), Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		direct := readAll(t, src)
		rd, err := src.Open()
		if err != nil {
			t.Fatal(err)
		}
		ahead := readAll(t, NewSource(name, 0, func() (Reader, error) { return ReadAhead(rd), nil }))
		for _, got := range [][]Request{direct, ahead} {
			if len(got) != len(c.want) {
				t.Fatalf("%s: %+v, want %+v", name, got, c.want)
			}
			for i, w := range c.want {
				if q := got[i]; math.Abs(q.Arrival-w.Arrival) > 1e-9 || q.Prompt != w.Prompt || q.Output != w.Output {
					t.Errorf("%s: row %d = %+v, want %+v", name, i+1, q, w)
				}
			}
		}
	}
	// A quoted header is the Azure format's when forced, too.
	src, err := Parse("azure:"+writeFile(t, "forced.csv", `"TIMESTAMP","ContextTokens","GeneratedTokens"`+"\n"+`"2023-11-16 18:15:46.6805900","374","44"`+"\n"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, src); len(got) != 1 || got[0] != (Request{0, 374, 44}) {
		t.Errorf("azure: with a quoted header: %+v", got)
	}
}

// TestQuotedCSVErrors: quoting mistakes are refused at their file:line
// with what to write instead; a quoted number with a comma in it (a
// thousands separator, a decimal comma) is refused as a number, saying so.
func TestQuotedCSVErrors(t *testing.T) {
	for name, c := range map[string]struct{ body, want string }{
		// The quote opened on line 2 is never closed: the error is at line 2,
		// not at the end of the file.
		"unterminated.csv":      {GenericHeader + "\n30,\"100,10\n31,100,10\n32,100,10\n", `unterminated.csv:2: a quoted field is not closed on its line (a trace's fields never span lines): end it with '"': "30,\"100,10"`},
		"unterminated-last.csv": {AzureHeader + "\n2023-11-16 18:15:46.6805900,374,44\n\"2023-11-16 18:15:50.9951690,396,109\n", `unterminated-last.csv:3: a quoted field is not closed on its line`},
		"space.csv":             {"30, \"100\",10\n", `space.csv:1: column 5: a space before a quoted field's opening '"': remove it (a quoted field starts right after the ',')`},
		"bare.csv":              {"0,1,1\n30,1\"0,10\n", `bare.csv:2: column 5: a '"' inside an unquoted field: quote the whole field ("...", with "" for a quote inside it) or remove it`},
		"after.csv":             {"30,\"10\"0,10\n", `after.csv:1: column 7: a quoted field goes on after its closing '"': put the ',' right after the closing quote`},
		"thousands.csv":         {"30,\"1,000\",10\n", `thousands.csv:1: prompt_tokens "1,000": want an integer 1..2147483647 (without a thousands separator or a decimal comma: 1000, 0.5)`},
		"decimal.csv":           {"\"1,5\",100,10\n", `decimal.csv:1: arrival_s "1,5": want a finite number of seconds >= 0 (without a thousands separator or a decimal comma`},
		"azthousands.csv":       {AzureHeader + "\n\"2023-11-16 18:15:46.6805900\",\"1,374\",\"44\"\n", `azthousands.csv:2: ContextTokens "1,374": want an integer 1..2147483647 (without a thousands separator`},
		// A ragged row: the count of fields as the parser splits them (the
		// quoted comma is inside a field).
		"ragged.csv":      {"30,100,10\n\"31,100\",10\n", `ragged.csv:2: want 3 fields arrival_s,prompt_tokens,output_tokens, got 2: "\"31,100\",10"`},
		"azragged.csv":    {AzureHeader + "\n\"2023-11-16 18:15:46.6805900\",\"374\",\"44\",\"x\"\n", `azragged.csv:2: want 3 fields TIMESTAMP,ContextTokens,GeneratedTokens, got 4`},
		"quotedorder.csv": {"\"prompt_tokens\",\"arrival_s\",\"output_tokens\"\n1,1,1\n", `quotedorder.csv:1: header "\"prompt_tokens\",\"arrival_s\",\"output_tokens\"": want arrival_s,prompt_tokens,output_tokens`},
	} {
		src, err := Parse(writeFile(t, name, c.body), Options{})
		if err == nil {
			_, _, err = Check(context.Background(), src)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v\nwant it to contain %s", name, err, c.want)
		}
	}
	// azure: forced on a file without the header, or an empty one.
	for name, c := range map[string]struct{ body, want string }{
		"noheader.csv": {"2023-11-16 18:15:46.6805900,374,44\n", "noheader.csv:1: want the header TIMESTAMP,ContextTokens,GeneratedTokens on the first line"},
		"blank.csv":    {"\n" + AzureHeader + "\n", "blank.csv:2: want the header TIMESTAMP,ContextTokens,GeneratedTokens on the first line"},
		"empty.csv":    {"", "empty.csv:1: want the header TIMESTAMP,ContextTokens,GeneratedTokens, found an empty file"},
		"badquote.csv": {"\"TIMESTAMP,ContextTokens,GeneratedTokens\n", "badquote.csv:1: a quoted field is not closed on its line"},
	} {
		src, err := Parse("azure:"+writeFile(t, name, c.body), Options{})
		if err == nil {
			_, _, err = Check(context.Background(), src)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("azure:%s: err = %v\nwant it to contain %s", name, err, c.want)
		}
	}
}

// TestAzureFarTimestamps: arrivals are seconds since the first row for
// any year the layout reads. A first row at 0001-01-01 00:00:00 (Go's zero
// time) was taken for "no first row yet", so each row became the first
// and arrived at 0; spans over 292 years saturated a time.Duration (a row
// 400 years on arrived at 9223372036.85 s).
func TestAzureFarTimestamps(t *testing.T) {
	for name, c := range map[string]struct {
		body string
		want []float64
	}{
		"zero.csv": {AzureHeader + "\n0001-01-01 00:00:00,10,10\n0001-01-01 00:00:30.5,10,10\n", []float64{0, 30.5}},
		// 2023-11-16 to 2423-11-16: 400 Gregorian years, 146097 days.
		"far.csv": {AzureHeader + "\n2023-11-16 18:15:46,10,10\n2423-11-16 18:15:46.25,10,10\n", []float64{0, 146097*86400 + 0.25}},
	} {
		got := readAll(t, mustParse(t, writeFile(t, name, c.body)))
		if len(got) != len(c.want) {
			t.Fatalf("%s: %d requests, want %d", name, len(got), len(c.want))
		}
		for i, w := range c.want {
			if got[i].Arrival != w {
				t.Errorf("%s: row %d arrives at %v s, want %v", name, i+1, got[i].Arrival, w)
			}
		}
	}
}

// TestNegativeZeroArrival: an arrival written -0 (a decimal number >= 0,
// so read) is second 0, not IEEE negative zero, which simulate printed as
// a span of "-0 s" and JSON "duration_s": -0.
func TestNegativeZeroArrival(t *testing.T) {
	for name, body := range map[string]string{
		"generic.csv":  "-0,100,10\n-0.0,100,10\n",
		"burstgpt.csv": BurstGPTHeader + "\n-0,ChatGPT,100,10,110,Conversation log\n",
		"t.jsonl":      `{"timestamp": -0, "input_length": 100, "output_length": 10}` + "\n",
	} {
		src, err := Parse(writeFile(t, name, body), Options{})
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		got := readAll(t, src)
		if len(got) == 0 {
			t.Fatalf("%s: no rows", name)
		}
		for i, q := range got {
			if q.Arrival != 0 || math.Signbit(q.Arrival) {
				t.Errorf("%s: row %d arrives at %v (sign bit %v), want +0", name, i, q.Arrival, math.Signbit(q.Arrival))
			}
		}
	}
}

// TestAzureNearMissHeader: a first line naming an Azure column in another
// letter case, or with a column missing or added, was read as a generic
// CSV header and refused as "want arrival_s,prompt_tokens,output_tokens",
// never naming the Azure header the file was meant to have.
func TestAzureNearMissHeader(t *testing.T) {
	row := "2023-11-16 18:15:46.6805900,374,44\n"
	for name, head := range map[string]string{
		"lower.csv": "timestamp,contexttokens,generatedtokens",
		"two.csv":   "TIMESTAMP,ContextTokens",
		"four.csv":  "TIMESTAMP,ContextTokens,GeneratedTokens,Extra",
		"other.csv": "time,ContextTokens,generated",
	} {
		src, err := Parse(writeFile(t, name, head+"\n"+row), Options{})
		if err == nil {
			_, _, err = Check(context.Background(), src)
		}
		want := name + `:1: want the header TIMESTAMP,ContextTokens,GeneratedTokens on the first line (an Azure LLM trace: those three columns in that order, the names case-sensitive), found "` + head + `"`
		if err == nil || !strings.HasSuffix(err.Error(), want) {
			t.Errorf("%s: %v\nwant %s", name, err, want)
		}
	}
	// A generic CSV's own header is still the generic one's.
	if src, err := Parse(writeFile(t, "g.csv", GenericHeader+"\n0,1,1\n"), Options{}); err != nil {
		t.Errorf("generic header: %v", err)
	} else if _, _, err := Check(context.Background(), src); err != nil {
		t.Errorf("generic header: %v", err)
	}
}

// TestSpanOverflow: a day count whose seconds pass float64 (1e305 days is
// 8.64e309 s) is refused, not read as +Inf (a --window end or a poisson
// duration that never ends); a poisson duration is bounded as the other
// shapes' (below 1e9 s); the day unit still reads alone and before a Go
// duration.
func TestSpanOverflow(t *testing.T) {
	for _, v := range []string{"1e305d", "1e305d1h", "-1e305d"} {
		if s, err := ParseSeconds(v); err == nil {
			t.Errorf("ParseSeconds(%q) = %g, want an error", v, s)
		}
	}
	if a, b, err := ParseWindow("0:1e305d"); err == nil {
		t.Errorf("ParseWindow(0:1e305d) = %g, %g, want an error", a, b)
	}
	for _, spec := range []string{"poisson,duration=1e305d", "poisson,duration=1e9", "poisson,duration=11575d"} {
		if _, err := ParseSynthetic(spec, 1); err == nil || !strings.Contains(err.Error(), "field 2 duration") {
			t.Errorf("%s: err = %v, want field 2 duration refused", spec, err)
		}
	}
	for v, want := range map[string]float64{"0d": 0, "2d": 172800, "1d12h": 129600, "1e303d": 8.64e307, "90m": 5400} {
		if s, err := ParseSeconds(v); err != nil || s != want {
			t.Errorf("ParseSeconds(%q) = %g, %v, want %g", v, s, err, want)
		}
	}
	if s, err := ParseSynthetic("poisson,duration=11574d", 1); err != nil || s.Duration != 11574*86400 {
		t.Errorf("poisson,duration=11574d: %+v, %v, want 999993600 s", s, err)
	}
}

// TestSpanSign: a sign only at the front, negating the whole span as Go's
// durations do (-1h30m is -5400 s): -1d12h is -(86400 + 43200) = -129600,
// not -86400 + 43200 (it read +12 h); a sign after the day part is refused.
func TestSpanSign(t *testing.T) {
	for v, want := range map[string]float64{"-1d12h": -129600, "-2d": -172800, "+1d1s": 86401, "-90m": -5400} {
		if s, err := ParseSeconds(v); err != nil || s != want {
			t.Errorf("ParseSeconds(%q) = %g, %v, want %g", v, s, err, want)
		}
	}
	for _, v := range []string{"1d-2h", "1d+2h", "-1d-2h"} {
		if s, err := ParseSeconds(v); err == nil {
			t.Errorf("ParseSeconds(%q) = %g, want an error", v, s)
		}
	}
}

// TestSortGeneratedRefused: sort applies to a trace file (its rows read and
// sorted); a generated trace is in time order, so Sort with reference or a
// synthetic: spec is refused, naming the spec, rather than ignored.
func TestSortGeneratedRefused(t *testing.T) {
	for _, spec := range []string{"reference", "synthetic:poisson,rate=1,duration=60", "synthetic:onoff"} {
		_, err := Parse(spec, Options{Seed: 1, Sort: true})
		if want := "trace \"" + spec + "\" is generated in time order: sort (--sort) applies to a trace file"; err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s with Sort: %v, want %q", spec, err, want)
		}
	}
}
