package main

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/backtest"
)

// TestSimulateEdgeFlags: flag values that hung, ran out of memory or ran
// the whole replay before failing are invalid input (exit 2) naming the
// flag, before any replay.
func TestSimulateEdgeFlags(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no", "such", "dir", "x.png")
	afile := filepath.Join(t.TempDir(), "afile")
	if err := os.WriteFile(afile, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	loop := filepath.Join(t.TempDir(), "loop") // a symbolic link to itself
	if err := os.Symlink(loop, loop); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--period", "1ns"}, "--period 1ns: want at least 1s"}, // was: out of memory (60 s / 1 ns TTFT slots)
		{[]string{"--period", "500ms"}, "--period 500ms: want at least 1s"},
		{[]string{"--max-batched-tokens", "0"}, "--max-batched-tokens 0: want >= 1"}, // was: silently 8192
		{[]string{"--drain", "100000h"}, "--drain 100000h0m0s: want 0 to 8388608 periods"},
		{[]string{"--gpu-hour-price", "1e308"}, "--gpu-hour-price 1e+308: want a price from 0 to 1e+06"}, // was: JSON failed on +Inf
		{[]string{"--initial", "1000000"}, "--initial 1000000: want at most 10000"},                      // was: minutes adding replicas
		{[]string{"--plot", missing}, "directory " + filepath.Dir(missing) + " does not exist"},
		// A file where the directory belongs is named as one (it read
		// "directory F does not exist" while F existed).
		{[]string{"--plot", filepath.Join(afile, "x.png")}, "--plot \"" + filepath.Join(afile, "x.png") + "\": " + afile + " is a file, not a directory"},
		{[]string{"--plot", filepath.Join(loop, "x.png")}, "--plot \"" + filepath.Join(loop, "x.png") + "\": " + loop + " is a loop of symbolic links, not a directory"},
		{[]string{"--window", "NaN:5"}, "--window"}, // was: a replay that never ended
		{[]string{"--window", "0:Inf"}, "--window"},
		{[]string{"--trace", "synthetic:poisson,duration=NaN"}, "duration=\"NaN\""},
		{[]string{"--policy", "hpa(hpa(queue:24))"}, "not another hpa(...)"},
		{[]string{"--policy", "queue:24,lookahead=1e10"}, "lookahead=\"1e10\": want seconds"},
		{[]string{"-p", "fixed:100000"}, "fixed:N wants a replica count N from 0 to 10000"}, // was: a minute replaying 100000 replicas
		{[]string{"--trace", "synthetic:poisson,rate=1e9"}, "want requests per second, more than 0 and less than 1e9"},
		// Rate and duration each in range, their product not: 6.048e11
		// requests, a replay of months (tune held its windows in memory).
		{[]string{"--trace", "synthetic:poisson,rate=1e6,duration=7d"}, `--trace: trace "synthetic:poisson,rate=1e6,duration=7d" draws about 6.05e+11 requests`},
	} {
		code, _, errs := runSimulate(t, c.args...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 mentioning %q", c.args, code, errs, c.want)
		}
	}
	// A trace whose second arrival is 10^300 s away: an error, at once.
	far := filepath.Join(t.TempDir(), "far.csv")
	if err := os.WriteFile(far, []byte("0,100,10\n1e300,100,10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := runSimulate(t, "--trace", far, "--policy", "queue:24"); code != 2 || !strings.Contains(errs, "a replay covers at most 8388608 periods") {
		t.Errorf("far arrival: exit %d, stderr %q; want exit 2 naming the bound", code, errs)
	}
	// The message names the file and its arrivals, and the advice fits:
	// a stray last row (cut it), or unix times in a generic CSV, whose
	// first arrival is kept (it said "raise the factor, cut the trace
	// with --window", which no window fixes). 1733230005 s / 15 s is
	// 1.16e8 periods.
	unix := filepath.Join(t.TempDir(), "unix.csv")
	if err := os.WriteFile(unix, []byte("1733230000,100,10\n1733230005,100,10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A BurstGPT file keeps its first Timestamp too; the advice names that
	// column, not only the generic CSV's arrival_s.
	bg := filepath.Join(t.TempDir(), "bg.csv")
	if err := os.WriteFile(bg, []byte("Timestamp,Model,Request tokens,Response tokens,Total tokens,Log Type\n1733230000,ChatGPT,100,10,110,Conversation log\n1733230005,ChatGPT,100,10,110,Conversation log\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ file, want string }{
		{bg, "arrival_s (a BurstGPT file's Timestamp) counts seconds from the trace's start"},
		{far, "--trace far.csv: requests arrive from second 0 to 1e+300, 6.67e+298 periods of 15s; a replay covers at most 8388608 periods (about 1456 days at this period): cut the trace with --window"},
		{unix, "--trace unix.csv: requests arrive from second 1733230000 to 1733230005, 1.16e+08 periods of 15s"},
		{unix, "a unix time or milliseconds? Subtract the first row's arrival and write seconds"},
	} {
		if code, _, errs := runSimulate(t, "--trace", c.file, "--policy", "queue:24"); code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%s: exit %d, stderr %q; want exit 2 and %q", filepath.Base(c.file), code, errs, c.want)
		}
	}
	// A window still cuts the far row off (the span is checked on it).
	if code, _, errs := runSimulate(t, "--trace", far, "--window", "0:100", "--policy", "fixed:1"); code != 0 {
		t.Errorf("far arrival, --window 0:100: exit %d, stderr %q; want 0", code, errs)
	}
}

// TestProfileRefusesBaselinePolicy: profile adds the floor to the reactive
// policy as schedule= options, which only an infscale policy takes; a
// baseline or hpa(...) failed after all the queries (exit 1) and is now
// refused up front. recommended is written out (see TestCommandsOnSynthWeek
// for the accepted path against a real Prometheus).
func TestProfileRefusesBaselinePolicy(t *testing.T) {
	for _, p := range []string{"fixed:2", "oracle", "knative:16", "hpa(queue:24)"} {
		var out, errb bytes.Buffer
		args := []string{"profile", "--prometheus-url", "http://127.0.0.1:1", "--selector", `{namespace="llm"}`, "--policy", p}
		code := run(context.Background(), args, nil, &out, &errb)
		if code != exitInvalid || !strings.Contains(errb.String(), "not a baseline or hpa(...)") {
			t.Errorf("--policy %s: exit %d, stderr %q; want exit 2 explaining why", p, code, errb.String())
		}
	}
}

// TestPrometheusRangeFlagEdges: Prometheus range flags that sent unbounded queries (a start
// 10^300 s back, a 1 ms step: billions of points) or failed only at the
// first query (exit 1) are invalid input, exit 2, before any query.
func TestPrometheusRangeFlagEdges(t *testing.T) {
	sel := []string{"--selector", `{namespace="llm"}`}
	url := []string{"--prometheus-url", "http://127.0.0.1:1"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{append(append([]string{"--start=-1e300d"}, url...), sel...), "at most 100 years"},
		{append(append([]string{"--start=1e300"}, url...), sel...), "want unix seconds from 0 to 9223372036"},
		// 60 d at 1 s = 5,184,000 steps > 2^22 = 4,194,304.
		{append(append([]string{"--start=-60d", "--step=1s"}, url...), sel...), "is 5184000 steps: want at most 4194304"},
		// Below a second, whatever the range: 1 h at 1 ms (3,600,000 steps,
		// under the bound) held 1.2 GB after a minute of queries.
		{append(append([]string{"--start=-1h", "--step=1ms"}, url...), sel...), "--step 1ms: want at least 1s, e.g. 30s"},
		{append(append([]string{"--start=-1h", "--step=0s"}, url...), sel...), "--step 0s: want at least 1s"},
		{append([]string{"--prometheus-url", "ftp://u:secret@x"}, sel...), "--prometheus-url ftp://u:xxxxx@x: want http://"},
		{append([]string{"--prometheus-url", "http://"}, sel...), "want http://HOST"},
		{append(append([]string{"--target", "chat"}, url...), sel...), "--target \"chat\" needs --config"},
		{append(append([]string{"--server", "llamacpp"}, url...), sel...), "--server: server llamacpp: backtest needs a success counter"},
		{[]string{"--config", filepath.Join(t.TempDir(), "none.yaml"), "--target", "chat"}, "none.yaml: no such file: want serve's YAML configuration"},
		{append(append([]string{"--max-gap=1ns"}, url...), sel...), "--max-gap 1ns: want at least --step (30s)"}, // was: coverage -0.8%
	} {
		for _, cmd := range []string{"backtest", "profile"} {
			var out, errb bytes.Buffer
			code := run(context.Background(), append([]string{cmd}, c.args...), nil, &out, &errb)
			if code != exitInvalid || !strings.Contains(errb.String(), c.want) || strings.Contains(errb.String(), "secret") {
				t.Errorf("%s %v: exit %d, stderr %q; want exit 2 mentioning %q", cmd, c.args, code, errb.String(), c.want)
			}
		}
	}
}

// TestProfileShortRange: a range shorter than a day cannot make a profile;
// it is invalid input before any query (it was exit 1 after all of them).
func TestProfileShortRange(t *testing.T) {
	var out, errb bytes.Buffer
	args := []string{"profile", "--prometheus-url", "http://127.0.0.1:1", "--selector", `{namespace="llm"}`, "--start=-2h"}
	if code := run(context.Background(), args, nil, &out, &errb); code != exitInvalid || !strings.Contains(errb.String(), "spans 2h0m0s: a profile needs at least 24h") {
		t.Errorf("exit %d, stderr %q; want exit 2 naming the span", code, errb.String())
	}
}

// TestSimulateFileNamedReference: a trace file whose name starts with
// "reference" is a file: checked before the replays (it was skipped as if
// it were the built-in trace, and its bad row reported once per policy).
func TestSimulateFileNamedReference(t *testing.T) {
	p := filepath.Join(t.TempDir(), "reference_bad.csv")
	if err := os.WriteFile(p, []byte("0,100,10\n1,abc,10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errs := runSimulate(t, "--trace", p)
	if code != 2 || strings.Count(errs, "reference_bad.csv:2: prompt_tokens \"abc\"") != 1 || !strings.Contains(errs, "--trace: ") {
		t.Errorf("exit %d, stderr %q; want exit 2 and the bad row once, from --trace", code, errs)
	}
}

// TestSimulateQuotedTrace: a trace exported with every field quoted (a
// spreadsheet's or a database's CSV) replays as the plain file: the quoted
// Azure header is recognised (it was read as the generic format, refused
// at arrival_s "\"TIMESTAMP\""), and a quoted generic row reads; an
// unclosed quote is refused at its line.
func TestSimulateQuotedTrace(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	azq := write("azq.csv", `"TIMESTAMP","ContextTokens","GeneratedTokens"`+"\n"+
		`"2023-11-16 18:15:46.6805900","374","44"`+"\n"+
		`"2023-11-16 18:15:50.9951690","396","109"`+"\n"+
		`"2023-11-16 18:15:51.0000000","20","0"`+"\n")
	gq := write("gq.csv", "0,\"100\",10\n30,\"100\",10\n")
	for _, c := range []struct{ path, want string }{{azq, "trace azq.csv: 3 requests"}, {gq, "trace gq.csv: 2 requests"}} {
		if code, out, errs := runSimulate(t, "--trace", c.path, "-p", "fixed:1", "-q"); code != 0 || !strings.Contains(out, c.want) {
			t.Errorf("%s: exit %d, stdout %q, stderr %q; want exit 0 and %q", c.path, code, out, errs, c.want)
		}
	}
	bad := write("unclosed.csv", "0,100,10\n30,\"100,10\n")
	if code, _, errs := runSimulate(t, "--trace", bad, "-p", "fixed:1", "-q"); code != 2 || !strings.Contains(errs, "unclosed.csv:2: a quoted field is not closed on its line") {
		t.Errorf("exit %d, stderr %q; want exit 2 at unclosed.csv:2", code, errs)
	}
}

// TestSimulateWindowPastEnd: a --window reaching past the trace's end
// stops at its end. Arrivals 0, 10, 20, 30 and 40 s, --window 10:1000:
// the four from 10 s, over 40 - 10 = 30 s, where the replay ran 990 s
// and fixed:1 billed 990 / 60 = 16.5 replica-minutes for a trace that
// records nothing after 40 s. A window within the trace keeps its end.
func TestSimulateWindowPastEnd(t *testing.T) {
	f := filepath.Join(t.TempDir(), "short.csv")
	if err := os.WriteFile(f, []byte("0,100,10\n10,100,10\n20,100,10\n30,100,10\n40,100,10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ window, want string }{
		{"10:1000", "trace short.csv [10s,end): 4 requests over 30 s"},
		{"10:25", "trace short.csv [10s,25s): 2 requests over 15 s"},
	} {
		code, out, errs := runSimulate(t, "--trace", f, "--window", c.window, "--policy", "fixed:1")
		if code != 0 || !strings.Contains(out, c.want) {
			t.Errorf("--window %s: exit %d, stdout %q, stderr %q; want %q", c.window, code, out, errs, c.want)
		}
	}
}

// TestProfileStepAndZone: profile groups steps into clock hours, so a step
// over an hour is refused before any query (--step 2h profiled every other
// hour and read a week as 3.5 days; 48h said "less than 24 hours of data");
// a step that straddles the zone's clock hours is refused too;
// and "Local", the machine's zone, which serve's schedule: refuses, is not
// a zone to propose a schedule in.
func TestProfileStepAndZone(t *testing.T) {
	base := []string{"profile", "--prometheus-url", "http://127.0.0.1:1", "--selector", `{namespace="llm"}`}
	wantRefused(t, append(base, "--step", "2h"), nil, "--step 2h0m0s: profile groups the steps into clock hours: want at most 1h")
	wantRefused(t, append(base, "--step", "61m"), nil, "--step 1h1m0s: profile groups")
	wantRefused(t, append(base, "--timezone", "Local"), nil, `--timezone "Local" is the machine's zone`, "Europe/Berlin")
	// An unknown zone says what a zone is (it said only Go's "unknown time zone Mars/Olympus").
	wantRefused(t, append(base, "--timezone", "Mars/Olympus"), nil, `--timezone "Mars/Olympus" is not an IANA time zone`, "e.g. Europe/Berlin, America/New_York or UTC")
	// A step that does not divide an hour put 8 or 9 steps of 7m into an
	// hour, some of them mostly its neighbours'; 1h steps in a zone at
	// +05:30 each lay half in two local hours. Both refused before any query.
	wantRefused(t, append(base, "--step", "7m"), nil, "--step 7m0s: profile groups the steps into clock hours; 7m0s does not divide an hour")
	wantRefused(t, append(base, "--step", "1h", "--timezone", "Asia/Kolkata"), nil, "--step 1h0m0s with --timezone Asia/Kolkata: Asia/Kolkata is UTC+05:30", "want one that divides 30m0s")
	// An hour is a step profile takes: the unreachable Prometheus (exit 1).
	if code, _, stderr := runIn(t, nil, append(base, "--step", "1h", "--query-timeout", "1s")...); code != exitRuntime {
		t.Errorf("--step 1h: exit %d, want 1 (Prometheus unreachable); stderr:\n%s", code, stderr)
	}
}

// TestHistoryTimeoutNamesTheFlag: a Prometheus that stops answering in
// the middle of the range's queries (the first answered, then none) ends
// profile and backtest within --query-timeout (1 s here), exit 1, naming
// the flag to raise and the query; it said "raise it", "it" being nowhere
// on the command line.
func TestHistoryTimeoutNamesTheFlag(t *testing.T) {
	var n atomic.Int64
	stop := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) > 1 {
			select {
			case <-r.Context().Done():
			case <-stop:
			}
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"matrix","result":[]}}`))
	}))
	defer srv.Close()
	defer close(stop) // before Close, which waits for the handlers
	for _, cmd := range []string{"profile", "backtest"} {
		n.Store(0)
		began := time.Now()
		code, _, stderr := runIn(t, nil, cmd, "--prometheus-url", srv.URL, "--selector", `{namespace="llm"}`, "--query-timeout", "1s")
		if code != exitRuntime || !strings.Contains(stderr, "no answer in 1s, the limit per query (raise --query-timeout, or shorten the range") || !strings.Contains(stderr, "(query: ") {
			t.Errorf("%s: exit %d, stderr:\n%s\nwant exit 1 naming --query-timeout and the query", cmd, code, stderr)
		}
		if d := time.Since(began); d > 30*time.Second {
			t.Errorf("%s: took %s", cmd, d)
		}
	}
}

// TestHistoryRetryNotice: while Prometheus cannot answer (a 503 while it
// starts, a 429), backtest, profile and tune ask again up to 5 times after
// its Retry-After (at most a minute each): minutes in which stderr said
// nothing, as if the command hung. Each wait is now one line naming the
// answer, the wait and the ask. tune --shard (the CronJob's command,
// whose client the config file gives) waited in silence too, as the
// others did before: its target failed after the waits with no line of them.
func TestHistoryRetryNotice(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "0")
		http.Error(w, `{"status":"error","errorType":"unavailable","error":"starting"}`, http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "serve.yaml")
	if err := os.WriteFile(cfg, []byte(`prometheus: {url: `+srv.URL+`}
targets:
- name: chat
  server: vllm
  selector: '{namespace="llm"}'
  metrics: [{type: queue, target: 24}]
  replica: {gpu: h100-sxm, model: llama-3-8b}
  maxReplicaCount: 20
  tune: {history: 2h, dir: `+dir+`}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"backtest", "--prometheus-url", srv.URL, "--selector", `{namespace="llm"}`},
		{"profile", "--prometheus-url", srv.URL, "--selector", `{namespace="llm"}`},
		{"tune", "--prometheus-url", srv.URL, "--selector", `{namespace="llm"}`},
		{"tune", "--config", cfg, "--shard", "0/1"},
	} {
		cmd := strings.Join(args[:min(len(args), 3)], " ")
		code, stdout, stderr := runIn(t, nil, args...)
		if code != exitRuntime {
			t.Errorf("%s: exit %d, want 1; stderr:\n%s", cmd, code, stderr)
		}
		for _, want := range []string{
			"infscale: Prometheus could not answer now (server error: 503): asking again in 0s (ask 2 of 6)",
			"asking again in 0s (ask 6 of 6)",
		} {
			if !strings.Contains(stderr, want) {
				t.Errorf("%s: stderr lacks %q:\n%s", cmd, want, stderr)
			}
		}
		// The error: on stderr, or on the shard's line of the target (stdout).
		if want := "(asked 6 times over "; !strings.Contains(stderr+stdout, want) {
			t.Errorf("%s: output lacks %q:\nstdout:\n%s\nstderr:\n%s", cmd, want, stdout, stderr)
		}
	}
}

// TestProfileTooShortSays: a profile refused as shorter than a day says
// what the data covers and what to give: 23h18m of a day asked, the data
// ending 42 minutes before the range's end, 20 minutes of it in gaps
// (1 - 0.985694 of 23h18m = 1200 s, by hand), and an earlier --start.
func TestProfileTooShortSays(t *testing.T) {
	from := time.Date(2026, 12, 5, 22, 43, 0, 0, time.UTC)
	w := backtest.Workload{
		Grid: backtest.Grid{Start: from, Step: time.Minute, N: 23*60 + 18},
		Coverage: backtest.Coverage{Fraction: 1 - 1200.0/(23*3600+18*60),
			Requested: &backtest.Gap{From: from, To: from.Add(24 * time.Hour)}},
	}
	want := "the data covers 23h18m0s (2026-12-05T22:43:00Z .. 2026-12-06T22:01:00Z of the asked 2026-12-05T22:43:00Z .. 2026-12-06T22:43:00Z), 20m0s of it in gaps: give an earlier --start (--start=-8d for a week)"
	if got := dataCovers(w); !strings.HasPrefix(got, want) {
		t.Errorf("got  %q\nwant %q...", got, want)
	}
}
