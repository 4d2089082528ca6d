package main

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/infscale/infscale/pkg/fleet"
	"github.com/infscale/infscale/pkg/fleet/fleettest"
)

// modelsGateway serves the fleet f's API but answers GET /v1/models
// status, with a JSON body, as a gateway that routes the completions
// alone (404) or limits the rate (429) does; it counts the requests it
// passes on.
func modelsGateway(t *testing.T, f *fleet.Fleet, status int, passed *atomic.Int64) string {
	t.Helper()
	return fleettest.Gateway(t, f, func(r *http.Request) (int, string, bool) {
		return status, fmt.Sprintf(`{"error":"%s"}`, http.StatusText(status)), r.URL.Path == "/v1/models"
	}, passed)
}

// TestLoadCalibrateModelsRefused: --calibrate asks GET /v1/models for the
// server's max_model_len, and a refusal there was taken as "the server
// gives none", silently. A 429 every request would get too stops the run
// before any load, with the rate-limit advice a request's 429 gets (exit
// 1, no request sent); a 404 (a gateway without /v1/models) is a note
// naming the status and the second prompt length, not checked, and the
// calibration runs: c=1 and c=2 at 64-token prompts and at the default
// second length 2 x 64 + 8 / 2 = 132, unbounded.
func TestLoadCalibrateModelsRefused(t *testing.T) {
	f, err := fleet.Start(context.Background(), fleet.Config{Replicas: 1, Max: 1, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	args := func(base string) []string {
		return []string{base, "--served-model-name", "m", "--concurrency", "1,2", "--requests", "2", "--max-tokens", "8", "--prompt-tokens", "64",
			"--calibrate", filepath.Join(t.TempDir(), "cal.json"), "--progress", "never"}
	}

	var passed atomic.Int64
	base := modelsGateway(t, f, http.StatusTooManyRequests, &passed)
	code, out, errs := runLoad(t, args(base)...)
	want := "load: GET " + base + `/v1/models: 429 Too Many Requests: {"error":"Too Many Requests"} (the server or a gateway before it limits the request rate: ` +
		"what is measured is the limit, not the model; lift it for the test or load below it)"
	if code != 1 || out != "" || !strings.Contains(errs, want) || passed.Load() != 0 {
		t.Errorf("/v1/models 429: exit %d, %d requests passed, stdout %q, stderr %q; want 1, none, and %q", code, passed.Load(), out, errs, want)
	}

	passed.Store(0)
	base = modelsGateway(t, f, http.StatusNotFound, &passed)
	code, out, errs = runLoad(t, args(base)...)
	want = "note: load: GET " + base + `/v1/models: 404 Not Found: {"error":"Not Found"}: the server's max_model_len is unknown: ` +
		"the second prompt length is the default 2 x --prompt-tokens + --max-tokens / 2 = 132, not checked against it (if it is above the server's, give --calibrate-prompt-tokens)\n"
	// 2 points of 2 requests at 64-token prompts, then c=1 and c=2 again
	// at 132: 8 requests at least (the prefill probes add more).
	if code != 0 || !strings.Contains(errs, want) || !strings.Contains(out, "calibration written to") || passed.Load() < 8 {
		t.Errorf("/v1/models 404: exit %d, %d requests passed, stdout %q, stderr %q; want 0, at least 8, a calibration and the note %q", code, passed.Load(), out, errs, want)
	}
}
