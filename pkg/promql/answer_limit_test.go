package promql

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
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
