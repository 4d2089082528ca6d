package serve

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/modelserver"
)

// TestScrapeHeld: in embedded mode the held count is the activator's
// infscale_activator_held_requests (zero.held_scrape); the replica pages
// give running and waiting as before. An activator that does not answer
// leaves held unknown and counts an error of signal held. With no replica
// answering and the activator's upstream not ready, zero replicas is known.
func TestScrapeHeld(t *testing.T) {
	rep := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, vllmPage("2", "1", "0.1")) }))
	defer rep.Close()
	act := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "# TYPE infscale_activator_held_requests gauge\ninfscale_activator_held_requests 3\n")
	}))
	defer act.Close()
	src := NewScrapeSource(time.Second)
	tg := &config.Target{Name: "chat", Server: modelserver.VLLM, Scrape: config.Scrape{URLs: []string{rep.URL}}, Zero: &config.Zero{HeldScrape: act.URL}}
	rd := src.Read(context.Background(), []*config.Target{tg}, t0)[0]
	if rd.Obs.Held != 3 || rd.Obs.Running != 2 || rd.Obs.Waiting != 1 || len(rd.Errors) != 0 {
		t.Errorf("observation %+v errors %v, want held 3, running 2, waiting 1", rd.Obs, rd.Errors)
	}
	// No replica (the slot answers 503) and the activator's upstream not
	// ready: zero replicas, known.
	zero := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.Error(w, "no pod", 503) }))
	defer zero.Close()
	act0 := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "infscale_activator_held_requests 2\ninfscale_activator_upstream_ready 0\n")
	}))
	defer act0.Close()
	rd = src.Read(context.Background(), []*config.Target{{Name: "chat", Server: modelserver.VLLM, Scrape: config.Scrape{URLs: []string{zero.URL}}, Zero: &config.Zero{HeldScrape: act0.URL}}}, t0)[0]
	if !rd.CurrentKnown || rd.Obs.Current != 0 || rd.Obs.Held != 2 {
		t.Errorf("at zero: current %d known %v held %v, want 0, known, 2", rd.Obs.Current, rd.CurrentKnown, rd.Obs.Held)
	}
	act.Close()
	rd = src.Read(context.Background(), []*config.Target{tg}, t0)[0]
	if !math.IsNaN(rd.Obs.Held) || len(rd.Errors) != 1 || rd.Errors[0].Signal != "held" {
		t.Errorf("activator down: held %v errors %+v, want unknown and one held error", rd.Obs.Held, rd.Errors)
	}
}

// Issue 23 item 8: a third party's holder page that declares the held
// family a counter (value 5) was read as held 0 (the decoder's gauge
// accessor of a counter is empty), and the target scaled to zero. A family
// of the wrong type is unknown: held NaN, never 0, and an error of signal
// held.
func TestScrapeHeldWrongType(t *testing.T) {
	rep := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, vllmPage("0", "0", "0")) }))
	defer rep.Close()
	act := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "# TYPE infscale_activator_held_requests counter\ninfscale_activator_held_requests 5\n")
	}))
	defer act.Close()
	src := NewScrapeSource(time.Second)
	tg := &config.Target{Name: "chat", Server: modelserver.VLLM, Scrape: config.Scrape{URLs: []string{rep.URL}}, Zero: &config.Zero{HeldScrape: act.URL}}
	rd := src.Read(context.Background(), []*config.Target{tg}, t0)[0]
	if !math.IsNaN(rd.Obs.Held) || len(rd.Errors) != 1 || rd.Errors[0].Signal != "held" {
		t.Errorf("held declared a counter: held %v errors %+v, want unknown (NaN) and one held error", rd.Obs.Held, rd.Errors)
	}
}

// TestScrapeHeldBesideHangingPage: at zero replicas a scrape URL of a pod
// that is gone can hang (an IP nothing answers) until the cycle's period
// ends, here 300 ms under a 10 s scrape timeout. The activator's page
// answers at once, held 2 with no ready upstream: held 2 and zero
// replicas are known, so serve can activate. The held page was read after
// the replicas' pages, with what the hanging one left of the period:
// nothing, so held was unknown (a timeout) every cycle and the target
// never left zero.
func TestScrapeHeldBesideHangingPage(t *testing.T) {
	hang := httptest.NewServer(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
	}))
	defer hang.Close()
	act := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "infscale_activator_held_requests 2\ninfscale_activator_upstream_ready 0\n")
	}))
	defer act.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	tg := &config.Target{Name: "chat", Server: modelserver.VLLM, Scrape: config.Scrape{URLs: []string{hang.URL}}, Zero: &config.Zero{HeldScrape: act.URL}}
	rd := NewScrapeSource(10*time.Second).Read(ctx, []*config.Target{tg}, t0)[0]
	if rd.Obs.Held != 2 || !rd.CurrentKnown || rd.Obs.Current != 0 {
		t.Errorf("held %v, current %d known %v (errors %+v), want held 2 and 0 replicas known", rd.Obs.Held, rd.Obs.Current, rd.CurrentKnown, rd.Errors)
	}
	if len(rd.Errors) != 1 || rd.Errors[0].Signal != "page" || rd.Errors[0].Reason != "timeout" {
		t.Errorf("errors %+v, want the hanging page's timeout alone", rd.Errors)
	}
}
