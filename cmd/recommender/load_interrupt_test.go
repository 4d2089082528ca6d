package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// load on a server that never answers, interrupted during the first point
// of a sweep: exit 130 with one line, and nothing announced after the
// interrupt. It printed "c=1 (1 of 2) done in 5s: 0 requests, 1 errors"
// (the cancelled request counted as an error) and "c=2 (2 of 2) started".
func TestLoadInterruptedAnnouncesNothing(t *testing.T) {
	arrived, stop := make(chan struct{}, 1), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // then the server sees the client go away
		select {
		case arrived <- struct{}{}:
		default:
		}
		select { // hung: until the client goes away, or the test ends
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer srv.Close()
	defer close(stop) // before Close, which waits for the handlers
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-arrived: // the first request is in flight
		case <-time.After(10 * time.Second):
		}
		cancel()
	}()
	var out, errb bytes.Buffer
	code := run(ctx, []string{"load", srv.URL, "--concurrency", "1,2", "--duration", "30s", "--served-model-name", "m"}, strings.NewReader(""), &out, &errb)
	want := "load: 2 points (c=1, c=2), each up to 30s or 1000 requests, whichever comes first\n" +
		"load: c=1 (1 of 2) started\n" +
		"infscale: interrupted\n"
	if code != exitInterrupted || errb.String() != want || out.Len() != 0 {
		t.Errorf("exit %d, stdout %q, stderr:\n%s\nwant 130, nothing on stdout, stderr:\n%s", code, out.String(), errb.String(), want)
	}
}

// A proxy's HTML error page is quoted by an excerpt, once: on stderr, in
// the error that exits 1; the table does not repeat it. The 14-line page
// was printed whole on stderr and again on stdout.
func TestLoadErrorPageOnce(t *testing.T) {
	page := "<!DOCTYPE html>\n<html>\n<head>\n<title>502 Bad Gateway</title>\n</head>\n<body>\n" +
		"<center><h1>502 Bad Gateway</h1></center>\n<hr>\n<center>nginx/1.25.3</center>\n</body>\n</html>\n"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.WriteHeader(http.StatusBadGateway)
		_, _ = io.WriteString(w, page)
	}))
	defer srv.Close()
	code, out, errs := runLoad(t, srv.URL, "--concurrency", "1,2", "--requests", "2", "--served-model-name", "m", "--progress", "never")
	// title and h1 repeat the status; nginx's signature is the first other
	// text, and the last ("..." only when more follows).
	if want := "infscale: c=1: all 2 requests failed; the first: 502 Bad Gateway: nginx/1.25.3\n"; code != 1 || errs != want {
		t.Errorf("exit %d, stderr %q; want 1 and %q", code, errs, want)
	}
	if strings.Contains(out, "nginx") || strings.Contains(out, "first error:") || !strings.Contains(out, "no knee: the lowest load already has 2 failed request(s) (a point with errors is not within the SLO; first error in the error below)") {
		t.Errorf("stdout repeats the error or lacks the no-knee line:\n%s", out)
	}
}

// A sweep interrupted in its second point prints the points that finished
// (exit 130 still): c=1's 2 requests answered (two text chunks each), c=2's
// hang until the interrupt. The table has c=1's row and says the sweep was
// cut short; JSON has c=1 as its one point and "interrupted": true. The
// finished points were dropped: stdout was empty, minutes of a sweep lost.
func TestLoadInterruptedPrintsFinishedPoints(t *testing.T) {
	for _, output := range []string{"text", "json"} {
		var n atomic.Int32
		third, stop := make(chan struct{}), make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			switch n.Add(1) {
			case 1, 2:
				w.Header().Set("Content-Type", "text/event-stream")
				_, _ = io.WriteString(w, strings.Repeat("data: {\"choices\":[{\"text\":\"a\"}]}\n\n", 2)+"data: [DONE]\n\n")
				return
			case 3:
				close(third)
			}
			select {
			case <-r.Context().Done():
			case <-stop:
			}
		}))
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-third: // c=2 is running
			case <-time.After(10 * time.Second):
			}
			cancel()
		}()
		var out, errb bytes.Buffer
		code := run(ctx, []string{"load", srv.URL, "--concurrency", "1,2", "--requests", "2", "--duration", "30s",
			"--served-model-name", "m", "--progress", "never", "-o", output}, strings.NewReader(""), &out, &errb)
		cancel()
		close(stop)
		srv.Close()
		if code != exitInterrupted || !strings.HasSuffix(errb.String(), "infscale: interrupted\n") {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant 130 ending in infscale: interrupted", output, code, errb.String())
		}
		if output == "text" {
			if !strings.Contains(out.String(), "\n   c=1         2       0") || strings.Contains(out.String(), "c=2 ") ||
				!strings.Contains(out.String(), "interrupted during c=2: 1 of 2 points finished") {
				t.Errorf("text: stdout:\n%s\nwant c=1's row (2 requests, 0 errors), no c=2 row, and the interrupted line", out.String())
			}
			continue
		}
		var rep struct {
			Points []struct {
				Concurrency int `json:"concurrency"`
				Requests    int `json:"requests"`
			} `json:"points"`
			Interrupted bool `json:"interrupted"`
		}
		if err := json.Unmarshal(out.Bytes(), &rep); err != nil || len(rep.Points) != 1 || rep.Points[0].Concurrency != 1 ||
			rep.Points[0].Requests != 2 || !rep.Interrupted {
			t.Errorf("json: %v, stdout:\n%s\nwant points [c=1, 2 requests] and interrupted true", err, out.String())
		}
	}
}

// A calibration interrupted in its second prompt length's points prints
// the sweep that finished (c=1 and c=2, 2 requests each; --prompt-tokens
// 64 and --max-tokens 2 make the second length 2 x 64 + 2 / 2 = 129) and
// writes no file.
func TestLoadCalibrateInterruptedPrintsSweep(t *testing.T) {
	var n atomic.Int32
	third, stop := make(chan struct{}), make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.Method == http.MethodGet {
			_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"m","max_model_len":4096}]}`)
			return
		}
		switch n.Add(1) {
		case 1, 2, 3, 4:
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, strings.Repeat("data: {\"choices\":[{\"text\":\"a\"}]}\n\n", 2)+"data: [DONE]\n\n")
			return
		case 5:
			close(third)
		}
		select {
		case <-r.Context().Done():
		case <-stop:
		}
	}))
	defer srv.Close()
	defer close(stop)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-third:
		case <-time.After(10 * time.Second):
		}
		cancel()
	}()
	file := filepath.Join(t.TempDir(), "cal.json")
	var out, errb bytes.Buffer
	code := run(ctx, []string{"load", srv.URL, "--concurrency", "1,2", "--requests", "2", "--prompt-tokens", "64", "--max-tokens", "2",
		"--calibrate", file, "--calibrate-fit-max", "2", "--progress", "never"}, strings.NewReader(""), &out, &errb)
	if code != exitInterrupted || !strings.Contains(out.String(), "\n   c=1         2       0") || !strings.Contains(out.String(), "\n   c=2         2       0") ||
		!strings.Contains(out.String(), "interrupted during the calibration's points at 129-token prompts: no calibration written") {
		t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant 130, c=1's and c=2's rows and the interrupted line", code, out.String(), errb.String())
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("calibration file: %v; want none written", err)
	}
}

// The calibration's last phase, its prefill probes, runs after every sweep
// point: a fit that fails there (the server's usage counts both probe
// lengths alike) or an interrupt during the probes printed nothing but the
// error, the sweep's minutes of measurements lost. Both print the sweep
// (c=1 and c=2 at both prompt lengths, 2 requests each: requests 1-8) and
// write no file; the interrupt's line names the probes.
func TestLoadCalibrateProbesKeepSweep(t *testing.T) {
	for _, interrupt := range []bool{false, true} {
		var n atomic.Int32
		probe, stop := make(chan struct{}), make(chan struct{})
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			if r.Method == http.MethodGet {
				_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"m","max_model_len":4096}]}`)
				return
			}
			if i := n.Add(1); interrupt && i > 8 {
				if i == 9 {
					close(probe)
				}
				select {
				case <-r.Context().Done():
				case <-stop:
				}
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, strings.Repeat("data: {\"choices\":[{\"text\":\"a\"}]}\n\n", 2)+
				"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":7,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n")
		}))
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			select {
			case <-probe:
				cancel()
			case <-stop:
			}
		}()
		file := filepath.Join(t.TempDir(), "cal.json")
		var out, errb bytes.Buffer
		code := run(ctx, []string{"load", srv.URL, "--concurrency", "1,2", "--requests", "2", "--prompt-tokens", "64", "--max-tokens", "2",
			"--calibrate", file, "--calibrate-fit-max", "2", "--progress", "never"}, strings.NewReader(""), &out, &errb)
		close(stop)
		cancel()
		srv.Close()
		wantCode, wantLine := 1, "counts both prompt lengths alike"
		if interrupt {
			wantCode, wantLine = exitInterrupted, "interrupted during the calibration's prefill probes: no calibration written"
		}
		if code != wantCode || !strings.Contains(out.String(), "\n   c=1         2       0") || !strings.Contains(out.String(), "\n   c=2         2       0") ||
			!strings.Contains(out.String()+errb.String(), wantLine) {
			t.Errorf("interrupt %v: exit %d, stdout:\n%s\nstderr:\n%s\nwant %d, c=1's and c=2's rows and %q", interrupt, code, out.String(), errb.String(), wantCode, wantLine)
		}
		if _, err := os.Stat(file); !os.IsNotExist(err) {
			t.Errorf("interrupt %v: calibration file: %v; want none written", interrupt, err)
		}
	}
}

// TestLoadCalibrateJSONWarnings: the fit's warning lines (here the probes'
// TTFTs barely grow with the prompt: a prefill faster than the GPU's peak,
// the MFU capped) were the text output's alone: --output json dropped
// them, the calibration's doubts unseen by a script. JSON has them as
// calibration_warnings.
func TestLoadCalibrateJSONWarnings(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Prompt string `json:"prompt"`
		}
		_ = json.NewDecoder(r.Body).Decode(&body)
		if r.Method == http.MethodGet {
			_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"m","max_model_len":32768}]}`)
			return
		}
		words := len(strings.Fields(body.Prompt))
		time.Sleep(time.Duration(words) * 5 * time.Microsecond) // 200,000 tokens/s: above the 61,875 an H100 allows llama-3-8b
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = fmt.Fprintf(w, "%sdata: {\"choices\":[],\"usage\":{\"prompt_tokens\":%d,\"completion_tokens\":2}}\n\ndata: [DONE]\n\n",
			strings.Repeat("data: {\"choices\":[{\"text\":\"a\"}]}\n\n", 2), words)
	}))
	defer srv.Close()
	// Probes of 2,048 and 6,144 tokens: 20 ms apart at that rate, well
	// above a busy machine's jitter (64 and 192 were 0.64 ms apart, and
	// read alike once in CI).
	code, out, errs := runLoad(t, srv.URL, "--concurrency", "1,2", "--requests", "2", "--prompt-tokens", "2048", "--max-tokens", "2",
		"--calibrate", filepath.Join(t.TempDir(), "cal.json"), "--calibrate-fit-max", "2", "--progress", "never", "--output", "json")
	var rep struct {
		Warnings []string `json:"calibration_warnings"`
	}
	if err := json.Unmarshal([]byte(out), &rep); code != 0 || err != nil {
		t.Fatalf("exit %d, %v\n%s\n%s", code, err, out, errs)
	}
	found := false
	for _, w := range rep.Warnings {
		found = found || strings.Contains(w, "the MFU is capped at 1")
	}
	if !found {
		t.Errorf("calibration_warnings %q, want the MFU cap's", rep.Warnings)
	}
}
