package fleet

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// do sends method to url and returns the status, the body and the Allow
// header.
func do(t *testing.T, method, url string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), resp.Header.Get("Allow")
}

// stateOf is the State in the 200 answer to method on url.
func stateOf(t *testing.T, method, url string) State {
	t.Helper()
	code, body, _ := do(t, method, url)
	if code != http.StatusOK {
		t.Fatalf("%s %s: %d %s, want 200", method, url, code, body)
	}
	var s State
	if err := json.Unmarshal([]byte(body), &s); err != nil {
		t.Fatalf("%s %s: %v in %q", method, url, err, body)
	}
	return s
}

// TestControlAPI drives the fault drills over HTTP on one reference
// replica (max-num-seqs 64) with no arrivals of its own:
//
//   - a burst of 100 puts all 100 on the one ready replica: running plus
//     waiting is 100, at most 64 running (its batch limit), none pending
//     and none served (one request alone takes 1.77 s: TestEngineOneRequest);
//   - a scrape failure makes its /metrics answer 500 until it is lifted;
//   - cancel leaves nothing running, waiting or pending;
//   - a bad call changes nothing: a burst of MaxBurst+1 adds no request.
func TestControlAPI(t *testing.T) {
	f, err := Start(context.Background(), Config{Replicas: 1, Max: 2, ColdStart: time.Hour, Tick: 10 * time.Millisecond, Control: "127.0.0.1:0"})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	ctl := f.ControlURL()
	if !strings.HasPrefix(ctl, "http://127.0.0.1:") || ctl == f.URL() {
		t.Fatalf("control URL %q, want its own loopback port (the Service is %s)", ctl, f.URL())
	}
	if s := stateOf(t, "GET", ctl+"/fleet/state"); s != (State{Ready: 1, Desired: 1}) {
		t.Errorf("at start: %+v, want 1 ready, 1 desired, nothing else", s)
	}

	s := stateOf(t, "POST", ctl+"/fleet/burst?n=100")
	if s.Running+s.Waiting != 100 || s.Running > 64 || s.Pending != 0 || s.Served != 0 {
		t.Errorf("after a burst of 100: %+v, want running + waiting = 100, running <= 64, none pending or served", s)
	}

	metrics := f.URLs()[0]
	if s := stateOf(t, "POST", ctl+"/fleet/scrape-failure?on=true"); !s.ScrapeFailure {
		t.Errorf("scrape-failure?on=true: %+v, want scrape_failure true", s)
	}
	if code, _ := fetch(t, metrics); code != http.StatusInternalServerError {
		t.Errorf("during the scrape failure /metrics answers %d, want 500", code)
	}
	if s := stateOf(t, "POST", ctl+"/fleet/scrape-failure?on=false"); s.ScrapeFailure {
		t.Errorf("scrape-failure?on=false: %+v, want scrape_failure false", s)
	}
	if code, _ := fetch(t, metrics); code != http.StatusOK {
		t.Errorf("after the scrape failure /metrics answers %d, want 200", code)
	}

	if s := stateOf(t, "POST", ctl+"/fleet/cancel"); s.Running+s.Waiting+s.Pending != 0 {
		t.Errorf("after cancel: %+v, want nothing running, waiting or pending", s)
	}

	for _, tc := range []struct {
		method, path string
		code         int
		want         string
	}{
		{"GET", "/fleet/burst?n=5", http.StatusMethodNotAllowed, ""}, // Allow: POST
		{"POST", "/fleet/state", http.StatusMethodNotAllowed, ""},    // Allow: GET, HEAD
		{"POST", "/fleet/burst", http.StatusBadRequest, "POST /fleet/burst: give n once (?n=...), a whole number of requests 1..10000"},
		{"POST", "/fleet/burst?n=1&n=2", http.StatusBadRequest, "give n once"},
		{"POST", "/fleet/burst?n=0", http.StatusBadRequest, "n=0: want a whole number of requests 1..10000"},
		{"POST", "/fleet/burst?n=-3", http.StatusBadRequest, "n=-3: want a whole number"},
		{"POST", "/fleet/burst?n=1.5", http.StatusBadRequest, "n=1.5: want a whole number"},
		{"POST", "/fleet/burst?n=abc", http.StatusBadRequest, "n=abc: want a whole number"},
		{"POST", "/fleet/burst?n=10001", http.StatusBadRequest, "n=10001: want a whole number of requests 1..10000"},
		{"POST", "/fleet/burst?n=5&count=5", http.StatusBadRequest, `POST /fleet/burst: unknown parameter "count" (it takes n)`},
		{"POST", "/fleet/scrape-failure?on=yes", http.StatusBadRequest, "on=yes: want true or false"},
		{"POST", "/fleet/scrape-failure", http.StatusBadRequest, "give on once (?on=...), true or false"},
		{"POST", "/fleet/cancel?all=1", http.StatusBadRequest, `unknown parameter "all" (it takes no parameter)`},
		{"GET", "/fleet/nothing", http.StatusNotFound, ""},
	} {
		code, body, allow := do(t, tc.method, ctl+tc.path)
		if code != tc.code || !strings.Contains(body, tc.want) {
			t.Errorf("%s %s: %d %q, want %d with %q", tc.method, tc.path, code, body, tc.code, tc.want)
		}
		if wantAllow := map[string]string{"GET": "POST", "POST": "GET"}[tc.method]; code == http.StatusMethodNotAllowed && !strings.Contains(allow, wantAllow) {
			t.Errorf("%s %s: 405 with Allow %q, want %s in it", tc.method, tc.path, allow, wantAllow)
		}
	}
	if s := stateOf(t, "GET", ctl+"/fleet/state"); s.Running+s.Waiting+s.Pending != 0 || s.ScrapeFailure {
		t.Errorf("after the refused calls: %+v, want them to change nothing", s)
	}
}

// TestControlOff: without Config.Control no control API is bound.
func TestControlOff(t *testing.T) {
	f, err := Start(context.Background(), Config{Replicas: 1, Max: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	if u := f.ControlURL(); u != "" {
		t.Errorf("ControlURL %q, want none", u)
	}
	if code, _ := fetch(t, f.URL()+"/fleet/state"); code != http.StatusNotFound {
		t.Errorf("the Service answers /fleet/state with %d, want 404 (the drills are not on it)", code)
	}
}
