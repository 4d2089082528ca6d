package main

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/infscale/infscale/pkg/fleet"
	"github.com/infscale/infscale/pkg/fleet/fleettest"
)

// llamaLoading is llama.cpp's server's 503 while it loads its model.
const llamaLoading = `{"error":{"code":503,"message":"Loading model","type":"unavailable_error"}}`

// loadingGateway serves the fleet f's API after its first `loading`
// requests, which it answers llama.cpp's 503 "Loading model" as a server
// loading its model does; it counts the requests it passes on.
func loadingGateway(t *testing.T, f *fleet.Fleet, loading int64, passed *atomic.Int64) string {
	t.Helper()
	var seen atomic.Int64
	return fleettest.Gateway(t, f, func(*http.Request) (int, string, bool) {
		return http.StatusServiceUnavailable, llamaLoading, seen.Add(1) <= loading
	}, passed)
}

// TestLoadServerLoading: a llama.cpp server loading its model answers 503
// "Loading model" to GET /v1/models, and load said to give
// --served-model-name, which would not help. Without --ready-check-timeout
// it is exit 1 before any load, quoting the server and saying the server
// is not ready and how to wait; with it, load waits (a line on stderr as
// it starts waiting, another when the server is ready) and runs: the
// gateway answers its first GET 503, the second check (a second later)
// passes, then the probe of one token and the point's 2 requests.
func TestLoadServerLoading(t *testing.T) {
	f, err := fleet.Start(context.Background(), fleet.Config{Replicas: 1, Max: 1, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	var passed atomic.Int64
	base := loadingGateway(t, f, 1<<20, &passed)
	code, out, errs := runLoad(t, base, "--concurrency", "1", "--requests", "2", "--max-tokens", "4", "--prompt-tokens", "8")
	want := "load: GET " + base + "/v1/models: 503 Service Unavailable: " + llamaLoading +
		" (the server is not ready: llama.cpp's answers 503 while it loads the model, a gateway 502, 503 or 504 without a ready server behind it; " +
		"run load again once it is ready, or --ready-check-timeout 10m waits up to 10 minutes for a server that is starting)"
	if code != 1 || out != "" || !strings.Contains(errs, want) || strings.Contains(errs, "--served-model-name") {
		t.Errorf("no wait: exit %d, stdout %q, stderr %q; want 1 and %q", code, out, errs, want)
	}

	passed.Store(0)
	base = loadingGateway(t, f, 1, &passed)
	code, out, errs = runLoad(t, base, "--concurrency", "1", "--requests", "2", "--max-tokens", "4", "--prompt-tokens", "8", "--ready-check-timeout", "1m")
	wait := "load: waiting up to 1m0s (--ready-check-timeout) for the server to be ready: GET " + base + "/v1/models: 503 Service Unavailable: " + llamaLoading
	if code != 0 || !strings.Contains(errs, wait) || !strings.Contains(errs, "load: the server is ready after 1s\n") || passed.Load() != 4 {
		t.Errorf("--ready-check-timeout 1m: exit %d, %d requests passed, stdout %q, stderr %q; want 0, 4 (GET, probe, 2 requests), %q and ready after 1s", code, passed.Load(), out, errs, wait)
	}
	if !strings.Contains(out, "c=1") || strings.Contains(out, "first error") {
		t.Errorf("--ready-check-timeout 1m: stdout %q; want the point c=1 without errors", out)
	}
}

// TestLoadReadyCheckTimeoutFlag: the flag is a duration >= 0 and at most
// a week, as load's other durations; vllm bench serve's name for it, in
// seconds, is told load's name and unit.
func TestLoadReadyCheckTimeoutFlag(t *testing.T) {
	code, _, errs := runLoad(t, "http://127.0.0.1:1", "--concurrency", "1", "--ready-check-timeout-sec", "600")
	if want := "unknown flag --ready-check-timeout-sec: load's is --ready-check-timeout, a duration (vllm bench serve's --ready-check-timeout-sec 600 is --ready-check-timeout 600s or 10m)"; code != 2 || !strings.Contains(errs, want) {
		t.Errorf("--ready-check-timeout-sec 600: exit %d, stderr %q; want 2 and %q", code, errs, want)
	}
	for _, tc := range []struct{ v, want string }{
		{"-1s", "--ready-check-timeout -1s: want a duration >= 0 (0: no wait)"},
		{"200h", "--ready-check-timeout 200h0m0s: at most 168h0m0s"},
	} {
		code, _, errs := runLoad(t, "http://127.0.0.1:1", "--concurrency", "1", "--ready-check-timeout="+tc.v)
		if code != 2 || !strings.Contains(errs, tc.want) {
			t.Errorf("%s: exit %d, stderr %q; want 2 and %q", tc.v, code, errs, tc.want)
		}
	}
}

// TestLoadCalibrateModelNotListed: --calibrate with a --served-model-name
// GET /v1/models does not list took the server's max_model_len as "none
// given", silently, and ran its default second prompt length unchecked.
// The note names the ids listed and the length run: 2 x 64 + 8 / 2 = 132.
func TestLoadCalibrateModelNotListed(t *testing.T) {
	f, err := fleet.Start(context.Background(), fleet.Config{Replicas: 1, Max: 1, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	base := fleettest.Gateway(t, f, func(r *http.Request) (int, string, bool) {
		return http.StatusOK, `{"object":"list","data":[{"id":"llama-3.1-8b","object":"model","max_model_len":4096}]}`, r.URL.Path == "/v1/models"
	}, nil)
	code, out, errs := runLoad(t, base, "--served-model-name", "m", "--concurrency", "1,2", "--requests", "2", "--max-tokens", "8", "--prompt-tokens", "64",
		"--calibrate", filepath.Join(t.TempDir(), "cal.json"), "--progress", "never")
	want := "note: load: GET " + base + `/v1/models lists only "llama-3.1-8b", not "m" (a vLLM answers 404 to a model it does not serve; a llama.cpp server of one model takes any name): ` +
		"the server's max_model_len is unknown: the second prompt length is the default 2 x --prompt-tokens + --max-tokens / 2 = 132, not checked against it (if it is above the server's, give --calibrate-prompt-tokens)\n"
	if code != 0 || !strings.Contains(errs, want) || !strings.Contains(out, "calibration written to") {
		t.Errorf("exit %d, stdout %q, stderr %q; want 0, a calibration and the note %q", code, out, errs, want)
	}
}
