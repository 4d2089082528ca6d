package promql

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
)

// The batched hot path (instantTagged) fails with the same Reason as
// client_golang's v1 API (Instant) for every kind of answer, so a batch
// cannot read differently from the single queries of its targets.
func TestBatchClientReasons(t *testing.T) {
	hang := func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}
	for _, tc := range []struct {
		name    string
		handler func(http.ResponseWriter, *http.Request)
		want    Reason
	}{
		{"500", reply(500, "internal error"), ReasonUnavailable},
		{"502 from a proxy", reply(502, "<html>bad gateway</html>"), ReasonUnavailable},
		{"503 query timeout", reply(503, `{"status":"error","errorType":"timeout","error":"query timed out"}`), ReasonTimeout},
		{"422 execution", reply(422, `{"status":"error","errorType":"execution","error":"many-to-many"}`), ReasonBadData},
		{"400 bad_data", reply(400, `{"status":"error","errorType":"bad_data","error":"parse error"}`), ReasonBadData},
		{"400 not JSON", reply(400, `bad request`), ReasonBadData},
		{"404", reply(404, `not found`), ReasonUnavailable}, // the URL's, not the query's
		{"401", reply(401, `unauthorized`), ReasonUnavailable},
		{"429", reply(429, `too many requests`), ReasonUnavailable},
		{"413 from a proxy", reply(413, `request entity too large`), ReasonBadData}, // the batch's size: retried target by target
		{"200 not JSON", reply(200, `<html>login</html>`), ReasonBadResponse},
		{"200 status error", reply(200, `{"status":"error","errorType":"bad_data","error":"x"}`), ReasonBadData},
		{"200 matrix", reply(200, `{"status":"success","data":{"resultType":"matrix","result":[]}}`), ReasonBadResponse},
		{"200 without status", reply(200, `{"data":{"resultType":"vector","result":[{"metric":{},"value":[1,"500"]}]}}`), ReasonBadResponse},
		{"200 status pending", reply(200, `{"status":"pending","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"500"]}]}}`), ReasonBadResponse},
		{"200 string", reply(200, `{"status":"success","data":{"resultType":"string","result":[1,"500"]}}`), ReasonBadResponse},
		{"200 bad sample", reply(200, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,2]}]}}`), ReasonBadResponse},
		{"hang past the timeout", hang, ReasonTimeout},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := fakeProm(t, tc.handler)
			_, _, err := c.instantTagged(context.Background(), plainText("up"), 0, time.Unix(1, 0))
			if got := ReasonOf(err); got != tc.want {
				t.Errorf("batch path: %v (%v), want %v", got, err, tc.want)
			}
			batch := err
			_, _, err = c.Instant(context.Background(), "up", time.Unix(1, 0))
			if got := ReasonOf(err); got != tc.want {
				t.Errorf("v1 path: %v (%v), want %v", got, err, tc.want)
			}
			// The reason is said once; an HTML answer says what it means.
			for _, e := range []error{batch, err} {
				if strings.Count(e.Error(), tc.want.String()) > 1 {
					t.Errorf("reason repeated: %v", e)
				}
			}
			// Prometheus answers a bad query 400 or 422: a 404 is a wrong
			// URL, said so (it read "client_error: client error: 404").
			if tc.name == "404" {
				want := "(nothing answers at the URL's /api/v1/: it is probably not a Prometheus API root, or its path prefix is wrong; give the base URL, e.g. http://prometheus:9090)"
				for _, e := range []error{batch, err} {
					if !strings.Contains(e.Error(), want) {
						t.Errorf("got %v, want it to say %q", e, want)
					}
				}
			}
			if tc.name == "200 not JSON" {
				want := "promql: bad_response: invalid character '<' looking for beginning of value (the URL answered a body that is not JSON, such as an HTML page: it is probably not a Prometheus API root"
				for _, e := range []error{batch, err} {
					if !strings.HasPrefix(e.Error(), want) {
						t.Errorf("got %v, want it to start %q", e, want)
					}
				}
			}
		})
	}
}

// The form body carries the query unchanged whatever its characters
// (spaces, quotes, escapes, the form's own separators, UTF-8), with the
// configured URL's own parameters, the time and the timeout (a wrong
// Content-Length would fail the request); a 405 to the
// POST is retried as GET (v1's DoGetFallback). Values come back by tag; a
// native histogram sample (no float value) is NaN, never 0, on both paths.
func TestBatchClientRequest(t *testing.T) {
	query := `sum(x{a="b c%+&;=#\\\"é\t"}) or label_replace(vector(1), "infscale_target", "1", "", "")`
	var methods []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		methods = append(methods, r.Method)
		if r.Method == http.MethodPost && len(methods) == 2 {
			w.WriteHeader(http.StatusMethodNotAllowed)
			return
		}
		if got := r.FormValue("query"); got != query {
			t.Errorf("%s: query %q, want %q", r.Method, got, query)
		}
		if r.FormValue("tenant") != "a b" || r.FormValue("time") != "1767607200.5" || r.FormValue("timeout") != "2s" {
			t.Errorf("%s: form %v", r.Method, r.Form)
		}
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"status":"success","warnings":["w1"],"data":{"resultType":"vector","result":[
			{"metric":{"infscale_target":"0","pod":"p"},"value":[1767607200.5,"7.5"]},
			{"metric":{"infscale_target":"1"},"value":[1767607200.5,"NaN"]},
			{"metric":{"infscale_target":"2"},"histogram":[1767607200.5,{"count":"1","sum":"1"}]},
			{"metric":{},"value":[1767607200.5,"+Inf"]},
			{"metric":{"infscale_target":"4"},"value":[1767607200.5,"500"],"histogram":[1767607200.5,{"count":"1","sum":"1"}]}]}}`))
	}))
	defer srv.Close()
	c, err := NewClient(ClientConfig{URL: srv.URL + "?tenant=a+b", Timeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(1767607200, 5e8)
	for range 2 { // the 2nd POST is answered 405
		vals, warn, err := c.instantTagged(context.Background(), plainText(query), 0, at)
		if err != nil {
			t.Fatal(err)
		}
		// A histogram beside a value (no server writes both) is a
		// histogram sample, NaN, as v1 reads it below: it read 500.
		if len(vals) != 5 || vals[0] != (taggedValue{0, 7.5, 1767607200.5}) || vals[1].target != 1 || !math.IsNaN(vals[1].value) ||
			vals[2].target != 2 || !math.IsNaN(vals[2].value) || vals[3].target != -1 || !math.IsInf(vals[3].value, 1) ||
			vals[4].target != 4 || !math.IsNaN(vals[4].value) {
			t.Errorf("values %v", vals)
		}
		if len(warn) != 1 || warn[0] != "w1" {
			t.Errorf("warnings %v", warn)
		}
	}
	if strings.Join(methods, ",") != "POST,POST,GET" {
		t.Errorf("methods %v, want POST, then POST answered 405 and GET", methods)
	}
	// What v1 reads from the same answer: the same values by tag.
	vec, _, err := c.Instant(context.Background(), query, at)
	if err != nil {
		t.Fatal(err)
	}
	if len(vec) != 5 || vec[0].Metric[TargetLabel] != "0" || vec[0].Value != model.SampleValue(7.5) || !math.IsNaN(float64(vec[4].Value)) {
		t.Errorf("v1 vector %v", vec)
	}
}

// The form body (formReader) is "query=" + the text form-encoded + the
// other parameters, which url.ParseQuery reads back as the input for every
// byte, whatever the reader's buffer size (one or two bytes included: a
// %XX is never split into an error), and as long as the Content-Length
// counts.
func TestFormReader(t *testing.T) {
	var all strings.Builder
	for c := range 256 {
		all.WriteByte(byte(c))
	}
	s := all.String() + `sum(x{a="b"}) or y`
	tail := "&time=1.5"
	for _, size := range []int{1, 2, 3, 7, 512} {
		var out []byte
		body, _ := newFormBody(plainText(s), tail)()
		buf := make([]byte, size)
		for {
			n, err := body.Read(buf)
			out = append(out, buf[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("size %d: %v", size, err)
			}
		}
		if want := len("query=") + formEscapedLen(s) + len(tail); len(out) != want {
			t.Errorf("size %d: %d bytes, want %d", size, len(out), want)
		}
		v, err := url.ParseQuery(string(out))
		if err != nil || v.Get("query") != s || v.Get("time") != "1.5" {
			t.Errorf("size %d: round trip %q, time %q (%v)", size, v.Get("query"), v.Get("time"), err)
		}
	}
}

// A Plan's batches carry the length of their text form-encoded (the
// POST's Content-Length less "query=" and the other parameters, counted
// once per Plan): what the body holds and what formEscapedLen counts of
// the text the body decodes to.
func TestPlanFormLen(t *testing.T) {
	p := NewPlan(manyTargets(3), Options{}, 0)
	batched := 0
	for _, b := range p.batches {
		if len(b.jobs) == 1 {
			continue
		}
		batched++
		r, _ := newFormBody(b.text, "")()
		body, err := io.ReadAll(r)
		if err != nil {
			t.Fatal(err)
		}
		if len("query=")+b.formLen != len(body) {
			t.Errorf("%v: formLen %d, body %d bytes", b.signal, b.formLen, len(body))
		}
		v, err := url.ParseQuery(string(body))
		if err != nil || formEscapedLen(v.Get("query")) != b.formLen {
			t.Errorf("%v: formLen %d, the decoded text's %d (%v)", b.signal, b.formLen, formEscapedLen(v.Get("query")), err)
		}
	}
	if batched == 0 {
		t.Fatal("no batched query")
	}
}

// TestRedirectToLoginSaysCredentials: an auth proxy in front of Prometheus
// (oauth2-proxy) answers a query without its session with a redirect to
// its login page, which answers 200 with HTML. Both paths said "not JSON
// ... it is probably not a Prometheus API root; give the base URL": the
// URL was right, the credentials missing. They say the redirect, where to
// (without the login URL's query) and what to give; bad_response. A
// redirect to a Prometheus answer is read as before.
func TestRedirectToLoginSaysCredentials(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/query", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/oauth2/start?rd=%2Fapi%2Fv1%2Fquery&state=secret", http.StatusFound)
	})
	mux.HandleFunc("/oauth2/start", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><body>Sign in</body></html>")
	})
	mux.HandleFunc("/moved/api/v1/query", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"7"]}]}}`)
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	c, err := NewClient(ClientConfig{URL: srv.URL})
	if err != nil {
		t.Fatal(err)
	}
	_, _, berr := c.instantTagged(context.Background(), plainText("up"), 0, time.Unix(1, 0))
	_, _, verr := c.Instant(context.Background(), "up", time.Unix(1, 0))
	want := "promql: bad_response: redirected to " + srv.URL + "/oauth2/start, whose answer is not a Prometheus API answer (an auth proxy's login page? give the prometheus block the credentials the proxy takes: authorization, basic_auth or oauth2; or use Prometheus's own URL) (query: up)"
	for name, err := range map[string]error{"batched": berr, "v1": verr} {
		if err == nil || err.Error() != want {
			t.Errorf("%s:\n got %v\nwant %s", name, err, want)
		}
	}

	mux.HandleFunc("/old/api/v1/query", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/moved/api/v1/query?"+r.URL.RawQuery, http.StatusTemporaryRedirect)
	})
	c, _ = NewClient(ClientConfig{URL: srv.URL + "/old"})
	if v, _, err := c.Instant(context.Background(), "up", time.Unix(1, 0)); err != nil || len(v) != 1 || v[0].Value != 7 {
		t.Errorf("a redirect to a Prometheus answer: %v (%v), want 7", v, err)
	}
}
