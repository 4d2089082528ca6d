package promql

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/modelserver"
)

// TestAnswerTooLarge: an answer that does not end (a URL streaming spaces
// after the start of a vector: it filled 11 GB of serve's memory in 12 s)
// is cut at 64 MiB for an instant query, the batched path included, and a
// range answer declaring more than 2 GiB is refused before its body is
// read: each a bad_response naming the bound. A padded answer under the
// bound still reads.
func TestAnswerTooLarge(t *testing.T) {
	const head = `{"status":"success","data":{"resultType":"vector","result":[`
	flood := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		if strings.HasSuffix(r.URL.Path, "/query_range") {
			w.Header().Set("Content-Length", strconv.FormatInt(2<<30+1, 10))
			w.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[]}}`))
			return
		}
		w.Write([]byte(head))
		chunk := []byte(strings.Repeat(" ", 1<<20))
		for n := 0; n < 80; n++ { // 80 MiB at most, past the bound
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	defer flood.Close()
	c, err := NewClient(ClientConfig{URL: flood.URL, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	check := func(what string, err error, mib string) {
		t.Helper()
		if ReasonOf(err) != ReasonBadResponse || !errors.Is(err, ErrAnswerTooLarge) || !strings.Contains(err.Error(), "more than "+mib+" MiB, the most infscale reads of one answer") {
			t.Errorf("%s: err = %v; want bad_response, more than %s MiB", what, err, mib)
		}
	}
	_, _, err = c.Instant(ctx, "up", time.Unix(1737152900, 0))
	check("instant", err, "64")
	tg := Target{Name: "chat", Server: modelserver.VLLM}
	tg.Selector, _ = ParseSelector(`{namespace="llm"}`)
	res, _ := (&Evaluator{API: c}).Evaluate(ctx, []Target{tg}, time.Unix(1737152900, 0))
	check("batched running", res[0].Errors[Running], "64")
	_, _, err = c.Range(ctx, "up", time.Unix(1000, 0), time.Unix(1060, 0), 30*time.Second)
	check("range", err, "2048")

	// 1 MiB of padding inside a well-formed answer is read as one.
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(head + strings.Repeat(" ", 1<<20) + `{"metric":{},"value":[1737152900,"3"]}]}}`))
	}))
	defer ok.Close()
	c, _ = NewClient(ClientConfig{URL: ok.URL, Timeout: 20 * time.Second})
	if v, _, err := c.Instant(ctx, "up", time.Unix(1737152900, 0)); err != nil || len(v) != 1 || v[0].Value != 3 {
		t.Errorf("padded answer: %v, %v; want one sample of 3", v, err)
	}
}

// zeros is an endless body of zero bytes (no memory behind it).
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// bodies is a RoundTripper answering every request 200 with an endless body.
type bodies struct{}

func (bodies) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{}, ContentLength: -1, Body: io.NopCloser(zeros{}), Request: r}, nil
}

// readN reads n bytes of body and returns the error of the read, if any.
func readN(body io.Reader, n int64) error {
	_, err := io.CopyN(io.Discard, body, n)
	return err
}

// TestAnswersReadAtOnceShareTheBound: the instant answers being read at
// once share MaxInstantAnswerBytes. Each query of a cycle (seven for one
// target, all at once) used to read its own 64 MiB: an endless answer
// held 854 MB of serve's RSS (128Mi is the chart's limit). Two answers of
// 40 MiB at once pass the bound, a third after the first is closed reads.
func TestAnswersReadAtOnceShareTheBound(t *testing.T) {
	rt := limitAnswers{rt: bodies{}}
	open := func() io.ReadCloser {
		req, _ := http.NewRequest(http.MethodPost, "http://prom/api/v1/query", nil)
		resp, err := rt.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp.Body
	}
	a, b := open(), open()
	if err := readN(a, 40<<20); err != nil {
		t.Fatalf("first answer, 40 MiB alone: %v", err)
	}
	err := readN(b, 40<<20)
	if !errors.Is(err, ErrAnswerTooLarge) || !strings.Contains(err.Error(), "more than 64 MiB, the most infscale reads of one answer or of all those being read at once") {
		t.Errorf("second answer, 40 MiB beside 40 MiB: %v; want the shared bound", err)
	}
	a.Close()
	b.Close()
	c := open()
	defer c.Close()
	if err := readN(c, 40<<20); err != nil {
		t.Errorf("third answer, 40 MiB after the others were closed: %v", err)
	}
	// An answer read to its end gives its share back without a Close.
	req, _ := http.NewRequest(http.MethodPost, "http://prom/api/v1/query", nil)
	resp, _ := limitAnswers{rt: short{}}.RoundTrip(req)
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Fatal(err)
	}
	if err := readN(c, 20<<20); err != nil {
		t.Errorf("third answer, 20 MiB more after a 10 MiB answer read to its end: %v", err)
	}
}

// short answers 10 MiB of zeros.
type short struct{}

func (short) RoundTrip(r *http.Request) (*http.Response, error) {
	return &http.Response{StatusCode: 200, Header: http.Header{}, ContentLength: -1, Body: io.NopCloser(io.LimitReader(zeros{}, 10<<20)), Request: r}, nil
}

// TestRangeAnswerBound: ClientConfig.MaxRangeAnswerBytes lowers a
// client's range bound (serve reads only its own series over at most an
// hour), and ForHistory's client reads up to MaxRangeAnswerBytes again.
// A range answer declaring 65 MiB is refused before it is read by the
// first and read by the second.
func TestRangeAnswerBound(t *testing.T) {
	const matrix = `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1767607200,"5"]]}]}}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", strconv.Itoa(65<<20))
		w.Write([]byte(matrix + strings.Repeat(" ", 65<<20-len(matrix))))
	}))
	defer srv.Close()
	c, err := NewClient(ClientConfig{URL: srv.URL, Timeout: 20 * time.Second, MaxRangeAnswerBytes: MaxInstantAnswerBytes})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1767607200, 0)
	_, _, err = c.Range(context.Background(), "up", at, at, time.Minute)
	if !errors.Is(err, ErrAnswerTooLarge) || !strings.Contains(err.Error(), "more than 64 MiB") {
		t.Errorf("range answer of 65 MiB under a 64 MiB bound: %v; want refused", err)
	}
	// The history client reads a range answer past 64 MiB that its
	// points make (250 series of 11,000 points of 25 bytes, 66 MiB):
	// padding is no longer read as one (TestRangeAnswerEndless).
	big := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		var pts strings.Builder
		for i := range MaxPointsPerSeries {
			if i > 0 {
				pts.WriteByte(',')
			}
			fmt.Fprintf(&pts, `[%d,"12345.6789"]`, 1767607200+60*i)
		}
		w.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[`))
		for i := range 250 {
			if i > 0 {
				w.Write([]byte(","))
			}
			fmt.Fprintf(w, `{"metric":{"pod":"chat-%d"},"values":[%s]}`, i, pts.String())
		}
		w.Write([]byte(`]}}`))
	}))
	defer big.Close()
	hc, _ := NewClient(ClientConfig{URL: big.URL, Timeout: 60 * time.Second})
	end := at.Add(time.Duration(MaxPointsPerSeries-1) * time.Minute)
	if m, _, err := hc.ForHistory(60*time.Second, 0).Range(context.Background(), "up", at, end, time.Minute); err != nil || len(m) != 250 || len(m[0].Values) != MaxPointsPerSeries {
		t.Errorf("the history client on 66 MiB of points: %d series, %v; want 250 read", len(m), err)
	}
}

// TestRangeAnswerEndless: a range answer that never ends is cut by what
// the range can hold, a few MiB in, not at the 2 GiB bound: a series
// repeated without end past the 61 steps asked (and one for rounding), spaces without end after a
// series, a series or a whole body repeated without end (Prometheus
// answers each label set once); each a bad_response naming the query.
func TestRangeAnswerEndless(t *testing.T) {
	for _, tc := range []struct {
		name, head, repeat, want string
	}{
		{"points", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1000,"1"]`, `,[1000,"1"]`,
			"series 1 of the answer has more than 62 points, the 61 steps asked and one"},
		{"padding", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[[1000,"1"]]}`, ` `,
			"1 MiB read holding 1 series and 1 points, more than such an answer takes"},
		// Each series past the first brings its own 64 KiB allowance: a
		// series repeated without end stayed under the byte bound, and a
		// body repeated without end likewise (its series again).
		{"series", `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"pod":"chat-0"},"values":[[1000,"1"]]}`, `,{"metric":{"pod":"chat-0"},"values":[[1000,"1"]]}`,
			`series {pod="chat-0"} twice in one answer`},
		{"unnamed", `{"status":"success","data":{"resultType":"matrix","result":[{"values":[[1000,"1"]]}`, `,{"values":[[1000,"1"]]}`,
			`series {} twice in one answer`},
		{"body", ``, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"__name__":"up","pod":"chat-0"},"values":[[1000,"1"]]},{"metric":{"pod":"chat-1"},"values":[]}]}}`,
			`series up{pod="chat-0"} twice in one answer`},
	} {
		var sent atomic.Int64
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(tc.head))
			chunk := []byte(strings.Repeat(tc.repeat, (64<<10)/len(tc.repeat)))
			for sent.Load() < 256<<20 {
				n, err := w.Write(chunk)
				sent.Add(int64(n))
				if err != nil {
					return
				}
			}
		}))
		c, err := NewClient(ClientConfig{URL: srv.URL, Timeout: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		_, _, err = c.ForHistory(20*time.Second, 0).Range(context.Background(), `sum(rate(vllm:request_success_total[1m]))`, time.Unix(1000, 0), time.Unix(1060, 0), time.Second)
		if ReasonOf(err) != ReasonBadResponse || !strings.Contains(err.Error(), tc.want) ||
			!strings.Contains(err.Error(), "sum(rate(vllm:request_success_total[1m]))") {
			t.Errorf("%s: err = %v; want bad_response with %q naming the query", tc.name, err, tc.want)
		}
		srv.Close()
		if n := sent.Load(); n > 64<<20 {
			t.Errorf("%s: %d MiB sent before the answer was cut; want a few", tc.name, n>>20)
		}
	}
}

// TestAnswerBudgetUnderMemoryLimit: the answers read at once share an
// eighth of the memory limit, at most MaxInstantAnswerBytes and at least
// 4 MiB: 115 MiB (GOMEMLIMIT in the chart's 128Mi container) shares
// 14.375 MiB; no limit 64 MiB; 16 MiB the 4 MiB floor.
func TestAnswerBudgetUnderMemoryLimit(t *testing.T) {
	for _, c := range []struct{ limit, want int64 }{
		{115 << 20, 15073280},
		{math.MaxInt64, 64 << 20},
		{16 << 20, 4 << 20},
		{1 << 30, 64 << 20},
	} {
		if got := answerBudgetBytes(c.limit, MaxInstantAnswerBytes); got != c.want {
			t.Errorf("limit %d: %d, want %d", c.limit, got, c.want)
		}
	}
}

// TestCutAnswerNotCalledHTML: an answer whose JSON stops part way (a
// proxy that cut it, closing the connection) is not said to be "not
// JSON, such as an HTML page" of a URL that is no Prometheus API root:
// the hint names an empty or cut body. A body that is not JSON at all
// keeps the HTML hint.
func TestCutAnswerNotCalledHTML(t *testing.T) {
	body := `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1737152900,"3"]`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(body))
	}))
	defer srv.Close()
	c, err := NewClient(ClientConfig{URL: srv.URL, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = c.Instant(context.Background(), "up", time.Unix(1737152900, 0))
	if ReasonOf(err) != ReasonBadResponse || strings.Contains(err.Error(), "HTML") || !strings.Contains(err.Error(), "ended inside its JSON") {
		t.Errorf("cut answer: %v; want bad_response naming a cut body, not an HTML page", err)
	}
	body = "<html>login</html>"
	_, _, err = c.Instant(context.Background(), "up", time.Unix(1737152900, 0))
	if !strings.Contains(err.Error(), "such as an HTML page") {
		t.Errorf("HTML answer: %v; want the HTML hint", err)
	}
}

// TestRangeScanPointBound: a range of 3 steps (start, start+step,
// start+2 step) lets a series hold 4 points (one more for the times'
// rounding) and refuses the 5th, saying both counts.
func TestRangeScanPointBound(t *testing.T) {
	body := func(n int) []byte {
		pts := strings.TrimSuffix(strings.Repeat(`[1000,"1"],`, n), ",")
		return []byte(`{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[` + pts + `]}]}}`)
	}
	if err := (&rangeScan{steps: 3}).feed(body(4)); err != nil {
		t.Errorf("4 points on 3 steps: %v; want read", err)
	}
	err := (&rangeScan{steps: 3}).feed(body(5))
	if want := "series 1 of the answer has more than 4 points, the 3 steps asked and one"; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("5 points on 3 steps: %v; want %q", err, want)
	}
}

// TestAnswerWithoutData: a success answer without "data" (a stub or a
// proxy; Prometheus always sends it) is a bad response naming what is
// missing, for an instant and a range query; it panicked (the nil value's
// type was read).
func TestAnswerWithoutData(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"success"}`))
	}))
	defer srv.Close()
	c, err := NewClient(ClientConfig{URL: srv.URL, Timeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	check := func(what string, err error) {
		t.Helper()
		if ReasonOf(err) != ReasonBadResponse || !strings.Contains(err.Error(), `status "success" without "data"`) || !strings.Contains(err.Error(), "up") {
			t.Errorf("%s: err = %v; want bad_response naming the missing data and the query", what, err)
		}
	}
	_, _, err = c.Instant(ctx, "up", time.Unix(1737152900, 0))
	check("instant", err)
	_, _, err = c.Range(ctx, "up", time.Unix(1000, 0), time.Unix(1060, 0), 30*time.Second)
	check("range", err)
}

// TestRangeScanMismatchedClose: a range answer whose '}' closes a list
// where a series object would be ({{[[""}: JSON no decoder reads) is a bad
// response; the scan read it as a series' end and hashed labels it had
// never set up, a panic in client_golang's reading goroutine that ended
// the process.
func TestRangeScanMismatchedClose(t *testing.T) {
	for _, body := range []string{`{{[[""}""`, `{"status":"success","data":{"result":[[1}]}}`} {
		if err := (&rangeScan{steps: 10}).feed([]byte(body)); err != nil {
			t.Errorf("%s: scan: %v, want nothing past its bounds", body, err)
		}
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.Write([]byte(body))
		}))
		c, err := NewClient(ClientConfig{URL: srv.URL, Timeout: 20 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if _, _, err := c.Range(context.Background(), "up", time.Unix(1000, 0), time.Unix(1060, 0), 30*time.Second); ReasonOf(err) != ReasonBadResponse {
			t.Errorf("%s: range err = %v, want a bad response", body, err)
		}
		srv.Close()
	}
}
