package serve

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/modelserver"
)

// TestScrapeURLFlipsBetweenPods: a scrape URL in front of two pods (a
// Service) answers pod A's page (started 1 h ago, 100,000 + 5,000 requests
// finished) and pod B's (started 2 h ago, 400,000 + 100,000) in turn. Read
// as restarts, each flip made the new pod's whole count one interval's
// increase: 500,000 requests over the ~0.1 s between two Reads here (over
// 15 s in production: 33,333 a second, under the 1e6 bound) scaled the
// target up on a demand metric. Now the flipped pages give no rate (the
// arrival rate is absent, never a number) and each flip is a bad_data page
// error naming the URL and what to do; two pages of pod A in a row give
// its rate again: 150 requests more, over the time between the two pages.
func TestScrapeURLFlipsBetweenPods(t *testing.T) {
	now := time.Now()
	a := demandText(float64(now.Add(-time.Hour).Unix()), 100000, 5000, 1e7, 5e6, [3]float64{10, 20, 20}, [3]float64{0, 0, 0})
	a2 := demandText(float64(now.Add(-time.Hour).Unix()), 100150, 5000, 1e7+1500, 5e6+900, [3]float64{10, 20, 20}, [3]float64{0, 0, 0})
	b := demandText(float64(now.Add(-2*time.Hour).Unix()), 400000, 100000, 4e7, 2e7, [3]float64{10, 20, 20}, [3]float64{0, 0, 0})
	var page atomic.Pointer[string]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		fmt.Fprint(w, *page.Load())
	}))
	defer srv.Close()
	tg := &config.Target{Name: "chat", Server: modelserver.VLLM, Scrape: config.Scrape{URLs: []string{srv.URL + "/metrics"}}}
	src := NewScrapeSource(5 * time.Second)
	var began time.Time // of the last Read
	read := func(p string) Reading {
		began = time.Now()
		page.Store(&p)
		time.Sleep(50 * time.Millisecond) // the pages' times (wall clock) apart
		return src.Read(t.Context(), []*config.Target{tg}, time.Now())[0]
	}
	read(a)
	// Flip 1 reads B, which started before A: another process for sure.
	// Flip 2 reads A again, started after B but an hour before the
	// previous scrape: another pod, or a restart of B with its clock an
	// hour behind serve's; the error says both.
	says := []string{"answered another process's page than at its previous scrape", "answered a page whose process started at"}
	for i, p := range []string{b, a} {
		rd := read(p)
		if !math.IsNaN(rd.Obs.ArrivalRate) || !math.IsNaN(rd.Obs.PromptTokensRate) {
			t.Errorf("flip %d: arrival rate %v, prompt %v tokens/s; want both absent (NaN): no rate across two pods", i+1, rd.Obs.ArrivalRate, rd.Obs.PromptTokensRate)
		}
		var found bool
		for _, e := range rd.Errors {
			if e.Signal == "page" && e.Reason == "bad_data" && strings.Contains(e.Err.Error(), srv.URL+"/metrics "+says[i]) &&
				strings.Contains(e.Err.Error(), "list each pod's own URL") && (i == 0 || strings.Contains(e.Err.Error(), "or this pod restarted with its clock over 30s behind serve's")) {
				found = true
			}
		}
		if !found {
			t.Errorf("flip %d: errors %+v; want a bad_data page error naming the URL and what to do", i+1, rd.Errors)
		}
	}
	since := began
	rd := read(a2)
	// The two pages were read less than time.Since(since) apart, and at
	// least the 50 ms sleep apart.
	if lo, hi := 150/time.Since(since).Seconds(), 150/0.05; !(rd.Obs.ArrivalRate >= lo && rd.Obs.ArrivalRate <= hi) || len(rd.Errors) != 0 {
		t.Errorf("pod A twice: arrival rate %v (errors %v), want %.0f..%.0f (150 requests between the last two Reads) and no error", rd.Obs.ArrivalRate, rd.Errors, lo, hi)
	}
}

// TestOtherPageErrorRedactsPassword: the page error of a URL in front of
// several processes writes its password xxxxx, as scrape.Load's errors do
// (url.URL.Redacted): the page of a process started at 50 s after one
// started at 100 s is another process's for sure.
func TestOtherPageErrorRedactsPassword(t *testing.T) {
	e := otherPage{prevStart: 100}.readError("http://scraper:s3cret@chat:8000/metrics", 50, "pod", "list each pod's own URL")
	msg := e.Err.Error()
	if want := "http://scraper:xxxxx@chat:8000/metrics answered another process's page than at its previous scrape (process_start_time_seconds 50, before the previous page's process started at 100): several pods behind one URL"; !strings.HasPrefix(msg, want) || strings.Contains(msg, "s3cret") {
		t.Errorf("error %q; want it to start %q and not to hold the password", msg, want)
	}
}
