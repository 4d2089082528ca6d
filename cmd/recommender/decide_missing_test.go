package main

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestDecideUnreadablePageIsMissing: a page that cannot be read (here an
// HTTP 503) is a missing replica, as in serve, not a failure: it stays in
// current (2) but does not report. The readable page has queue 2 + 10 = 12;
// target 4: ratio 12 / (4 x 1 reporting) = 3, a scale-up, so the HPA's
// missing-pods rule counts the missing replica at 0: 12 / (4 x 2) = 1.5,
// ceil(1.5 x 2) = 3, within the scale-up limit max(2 + 4, 2 x 2) = 6.
func TestDecideUnreadablePageIsMissing(t *testing.T) {
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "engine restarting", http.StatusServiceUnavailable)
	}))
	defer down.Close()
	page := "testdata/vllm-running2-waiting10.prom"
	wantDecision(t, decideOK(t, page, down.URL, "--target", "4"), 3, "DesiredWithinRange")

	code, out, errs := runDecide(t, page, down.URL, "--target", "4")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s; want 0", code, errs)
	}
	for _, want := range []string{"desired 3 (reason DesiredWithinRange), current 2", "1 of 2 replicas missing",
		"not voting: " + down.URL, "503", "a missing replica"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(errs, "warning: "+down.URL) {
		t.Errorf("stderr lacks the warning: %q", errs)
	}

	// No page readable: nothing to decide on, a runtime failure (exit 1).
	if code, _, errs := runDecide(t, down.URL, down.URL+"/again", "--target", "4"); code != exitRuntime || !strings.Contains(errs, "503") {
		t.Errorf("every page unreadable: exit %d, stderr %q; want 1 naming the 503", code, errs)
	}
}
