package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/infscale/infscale/internal/sharedtest"
	"github.com/infscale/infscale/internal/svgtest"
)

func runSimulate(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), append([]string{"simulate"}, args...), strings.NewReader(""), &out, &errb)
	return code, out.String(), errb.String()
}

// simJSON is the documented JSON shape (docs/simulate.md).
type simJSON struct {
	Policy         string   `json:"policy"`
	Requests       int64    `json:"requests"`
	Met            int64    `json:"met"`
	Late           int64    `json:"late"`
	Unserved       int64    `json:"unserved"`
	Rejected       int64    `json:"rejected"`
	Misses         int64    `json:"slo_misses"`
	MissPct        float64  `json:"miss_pct"`
	TTFTP50        *float64 `json:"ttft_p50_s"`
	TTFTP95        *float64 `json:"ttft_p95_s"`
	ReplicaMinutes float64  `json:"replica_minutes"`
	GPUCost        float64  `json:"gpu_cost"`
	Peak           int      `json:"peak"`
	ScaleEvents    int      `json:"scale_events"`
	Timeline       []struct {
		T       float64  `json:"t_s"`
		Desired int      `json:"desired"`
		Running *float64 `json:"running"`
	} `json:"timeline"`
}

func simulateJSON(t *testing.T, args ...string) []simJSON {
	t.Helper()
	code, out, errs := runSimulate(t, append(args, "--output", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rows []simJSON
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	return rows
}

func TestSimulateDefaultTable(t *testing.T) {
	code, out, errs := runSimulate(t)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"policy", "requests", "SLO miss", "miss %", "TTFT p50", "TTFT p95", "replica-min", "GPU cost", "peak", "scale events", "reversals", "tokens/GPU-h",
		"cpu:60", "queue:24,min=0,cooldown=120", "knative:16", "hpa(recommended)", "oracle"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	if errs != "" {
		t.Errorf("stderr %q, want nothing (not a terminal)", errs)
	}
}

// TestSimulateLegend: under the table, the units of replica-min and GPU
// cost (1 GPU per replica at --gpu-hour-price 3) and one line for each
// reference row present (oracle here, not optimal).
func TestSimulateLegend(t *testing.T) {
	code, out, errs := runSimulate(t, "-p", "oracle", "-p", "fixed:2", "--gpu-hour-price", "3")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	for _, want := range []string{"GPU cost: replica-min / 60 x 1 GPU(s) per replica x 3 per GPU-hour", "\noracle: reads the arrivals ahead", "docs/README.md#reading-the-output"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "optimal:") {
		t.Errorf("a legend line for optimal without its row:\n%s", out)
	}
}

func TestSimulateJSONAndPolicyCommas(t *testing.T) {
	rows := simulateJSON(t, "--policy", "cpu:60", "--policy", "queue:24,lookahead=90", "--gpu-hour-price", "3")
	if len(rows) != 2 || rows[1].Policy != "queue:24,lookahead=90" {
		t.Fatalf("rows %+v, want 2 policies with the comma kept inside the second", rows)
	}
	c := rows[0]
	// cpu:60 never scales: one replica over the reference trace's 1,500 s =
	// 25.0 replica-minutes = 0.4167 GPU-hours at 3 per hour = 1.25.
	if c.Peak != 1 || c.ScaleEvents != 0 || c.ReplicaMinutes != 25 || c.GPUCost != 1.25 {
		t.Errorf("cpu:60 %+v, want peak 1, no scale events, 25 replica-minutes, cost 1.25", c)
	}
	if c.Met+c.Late+c.Unserved+c.Rejected != c.Requests || c.Misses != c.Late+c.Unserved+c.Rejected {
		t.Errorf("cpu:60 accounting %+v", c)
	}
	if c.TTFTP50 == nil || c.TTFTP95 == nil || c.MissPct <= 50 {
		t.Errorf("cpu:60 %+v, want TTFT quantiles and most requests missing", c)
	}
}

func TestSimulateTimelineAndCSV(t *testing.T) {
	rows := simulateJSON(t, "--policy", "queue:24", "--timeline", "--trace", "synthetic:poisson,rate=5,duration=120,prompt=200,output=50")
	// 120 s at a 15 s period: samples at 15, 30, ..., 120.
	if len(rows) != 1 || len(rows[0].Timeline) != 8 || rows[0].Timeline[0].T != 15 {
		t.Fatalf("timeline %+v, want 8 samples from 15 s", rows[0].Timeline)
	}
	code, out, _ := runSimulate(t, "--policy", "queue:24", "--output", "csv")
	if code != 0 || !strings.HasPrefix(out, "policy,trace,requests,met,late,unserved,rejected,slo_misses,miss_pct,ttft_p50_s,ttft_p95_s,replica_minutes") {
		t.Errorf("csv: exit %d\n%s", code, out)
	}
	code, out, _ = runSimulate(t, "--policy", "queue:24", "--output", "csv", "--timeline")
	if code != 0 || !strings.HasPrefix(out, "policy,t_s,arrival_rate,desired") {
		t.Errorf("timeline csv: exit %d\n%s", code, out[:min(len(out), 200)])
	}
}

// TestSimulatePDTimelineReason: simulate --pd --timeline's text blocks have
// the reason column where the pool's policy says why (docs/simulate.md,
// Prefill/decode pairs): pd(queue:100000;fixed:2)'s prefill pool decides on
// its one metric, queue; the decode pool's fixed:2 says nothing, so its
// block has no such column.
func TestSimulatePDTimelineReason(t *testing.T) {
	code, out, errs := runSimulate(t, "--pd", "-q", "--policy", "pd(queue:100000;fixed:2)", "--timeline", "--trace", "synthetic:poisson,rate=5,duration=60")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	pre, dec, ok := strings.Cut(out[strings.Index(out, "(prefill)\n"):], "(decode)\n")
	if !ok {
		t.Fatalf("no decode block:\n%s", out)
	}
	lines := strings.Split(strings.TrimSpace(pre), "\n")
	if !strings.HasSuffix(lines[1], "misses  reason (metric)") || !strings.HasSuffix(lines[2], " (queue)") {
		t.Errorf("prefill block:\n%s\nwant a reason (metric) column ending in (queue)", pre)
	}
	if strings.Contains(dec, "reason") || strings.Contains(dec, "(") {
		t.Errorf("decode block (fixed:2):\n%s\nwant no reason column", dec)
	}
}

func TestSimulatePlot(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"p.png", "p.svg"} {
		f := filepath.Join(dir, name)
		code, _, errs := runSimulate(t, "--policy", "queue:24", "--policy", "oracle", "--plot", f)
		if code != 0 {
			t.Fatalf("%s: exit %d: %s", name, code, errs)
		}
		if !strings.Contains(errs, "plot: wrote "+f) {
			t.Errorf("stderr %q does not name the file written", errs)
		}
		st, err := os.Stat(f)
		if err != nil || st.Size() < 1000 {
			t.Errorf("%s: %v, size %v", name, err, st)
		}
	}
	if code, _, errs := runSimulate(t, "--plot", filepath.Join(dir, "p.gif")); code != 2 || !strings.Contains(errs, ".png or .svg") {
		t.Errorf("gif: exit %d %q", code, errs)
	}
}

func TestSimulateInvalid(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	bad := write("bad.csv", "arrival_s,prompt_tokens,output_tokens\n0,10,5\n1,ten,5\n")
	unsorted := write("unsorted.csv", "0,10,5\n5,10,5\n3,10,5\n")
	empty := write("empty.csv", "arrival_s,prompt_tokens,output_tokens\n")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--policy", "queue:24,mni=0"}, "column 10: unknown option mni"},
		{[]string{"--policy", "bogus:3"}, "want SIGNAL:TARGET"},
		{[]string{"--trace", bad}, "bad.csv:3: prompt_tokens \"ten\""},
		{[]string{"--trace", unsorted}, "unsorted.csv:3: timestamp 3 s is before the previous row's 5 s"},
		{[]string{"--trace", empty}, "trace has no requests"},
		{[]string{"--trace", filepath.Join(dir, "missing.csv")}, "no such file"},
		{[]string{"--trace", "synthetic:poisson,rate=-1"}, "field 2 rate"},
		{[]string{"--rate-scale", "0"}, "--rate-scale"},
		// The reference trace spans 1500 s: with the 15 s period, a factor
		// above 1500 / 15 = 100 compresses it into less than one period
		// (1e308 gave "over 0 s", 1000 an empty timeline).
		{[]string{"--rate-scale", "1e308"}, "--rate-scale 1e+308: the trace's 1500 s compress to 1.5e-305 s, less than one --period (15s), so no policy would decide; want a factor > 0 and at most 100"},
		{[]string{"--rate-scale", "1000", "--timeline"}, "--rate-scale 1000: the trace's 1500 s compress to 1.5 s, less than one --period (15s)"},
		{[]string{"--rate-scale", "101"}, "compress to 14.9 s, less than one --period (15s)"},
		// With a 30 s period the limit is 1500 / 30 = 50.
		{[]string{"--rate-scale", "51", "--period", "30s"}, "want a factor > 0 and at most 50"},
		{[]string{"--rate-scale", "10", "--window", "10"}, "--rate-scale 10 with --window 10: the replay spans 10 s, less than one --period (15s)"},
		// Stretched: 1500 s / 1e-300 is 1.5e303 s, far past the 2^23
		// periods of 15 s (about 1456 days) a replay covers; one line,
		// where each policy said it again.
		{[]string{"--rate-scale", "1e-300"}, "--rate-scale 1e-300: the replay spans 1.5e+303 s, 1e+302 periods of 15s; a replay covers at most 8388608 periods (about 1456 days at this period)"},
		// 1500 s / 1e-5 = 1.5e8 s = 1e7 periods: just past 8388608.
		{[]string{"--rate-scale", "1e-5"}, "a replay covers at most 8388608 periods"},
		{[]string{"--window", "10:5"}, "--window"},
		// Without --rate-scale too: 1490:2000 of the reference trace's
		// 1500 s is the 10 s to its end (it ran, every row the warm start);
		// at a 5 s period the same window is two periods.
		{[]string{"--window", "1490:2000"}, "--window 1490:2000: the replay spans 10 s, less than one --period (15s), so no policy would decide"},
		{[]string{"--period", "0s"}, "period"},
		{[]string{"--gpu", "tpu"}, "--gpu"},
	} {
		code, _, errs := runSimulate(t, c.args...)
		if code != 2 || !strings.Contains(errs, c.want) || strings.Count(errs, "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 mentioning %q", c.args, code, errs, c.want)
		}
	}
	if code, out, errs := runSimulate(t, "--window", "1490:2000", "--period", "5s", "--policy", "fixed:1"); code != 0 || !strings.Contains(out, "trace reference [1490s,end): ") {
		t.Errorf("--window 1490:2000 --period 5s: exit %d, stdout %q, stderr %q; want the 10 s replayed, two periods", code, out, errs)
	}
	// One problem, one line: tolerance= sets both directions (it was said
	// twice); an hpa(...) option given twice is refused (the last won).
	// Column 25: "hpa(queue:24)," 14 + "tolerance=" 10, then the value.
	for _, pol := range []string{"hpa(queue:24),tolerance=-0.1", "hpa(queue:24),tolerance=nan,behavior=none"} {
		if code, _, errs := runSimulate(t, "--policy", pol); code != 2 || strings.Count(errs, "\n") != 1 || !strings.Contains(errs, "infscale: --policy: policy "+strconv.Quote(pol)+": at column 25: tolerance: ") {
			t.Errorf("--policy %s: exit %d, stderr %q; want exit 2 and one line at column 25", pol, code, errs)
		}
	}
	// A policy given twice was replayed twice, its row printed twice (JSON
	// and CSV rows, named by the policy, collided): refused, spaces around
	// separators not making it another.
	if code, out, errs := runSimulate(t, "--policy", "queue:24", "--policy", "fixed:2", "--policy", "queue: 24"); code != 2 || out != "" || errs != "infscale: --policy #3 \"queue: 24\" repeats #1: give each policy once\n" {
		t.Errorf("a policy twice: exit %d, stdout %q, stderr %q", code, out, errs)
	}
	// Two policies in one flag: refused, saying how it reads and which
	// flags compare them (it said only "recommended takes no options").
	if code, out, errs := runSimulate(t, "-p", "recommended,fixed:1"); code != 2 || out != "" || strings.Count(errs, "\n") != 1 ||
		!strings.HasPrefix(errs, `infscale: --policy: policy "recommended,fixed:1": at column 13: recommended takes no options; `) ||
		!strings.HasSuffix(errs, "; it reads as two policies, recommended and fixed:1: to compare them, give each its own --policy (simulate, backtest: -p recommended -p fixed:1); a policy's commas join its own parts\n") {
		t.Errorf("-p recommended,fixed:1: exit %d, stdout %q, stderr %q; want exit 2 and the reading as two policies", code, out, errs)
	}
	if code, _, errs := runSimulate(t, "--policy", "hpa(queue:24),behavior=none,downwindow=60,downwindow=300"); code != 2 || !strings.Contains(errs, "at column 43: option downwindow given twice (also at column 29)") {
		t.Errorf("downwindow twice: exit %d, stderr %q", code, errs)
	}
	// At the limit, 100, the trace spans exactly one period: the timeline
	// has its row at t = 15.
	if code, out, errs := runSimulate(t, "--rate-scale", "100", "--policy", "fixed:1", "--timeline"); code != 0 || !strings.Contains(out, "over 15 s") || !strings.Contains(out, "\n      15 ") {
		t.Errorf("--rate-scale 100: exit %d, stderr %s, stdout %s; want a replay over 15 s with a timeline row at 15", code, errs, out)
	}
	// tune --trace takes the same rule.
	var out, errb bytes.Buffer
	if code := run(t.Context(), []string{"tune", "--trace", "reference", "--rate-scale", "1000"}, nil, &out, &errb); code != 2 || !strings.Contains(errb.String(), "--rate-scale 1000: the trace's 1500 s compress to 1.5 s") {
		t.Errorf("tune --rate-scale 1000: exit %d, stderr %q; want 2 naming the rule", code, errb.String())
	}
	// --sort accepts the unsorted file.
	if code, _, errs := runSimulate(t, "--trace", unsorted, "--sort", "--policy", "fixed:1"); code != 0 {
		t.Errorf("--sort: exit %d %s", code, errs)
	}
}

func TestSimulateAzureAccounting(t *testing.T) {
	p := sharedtest.Path(t, "traces", "azure-llm-2023-conv.csv")
	for _, r := range simulateJSON(t, "--trace", p, "--policy", "queue:24", "--policy", "recommended") {
		// README: 19,366 rows; every one is met, late, unserved or rejected.
		if r.Requests != 19366 || r.Met+r.Late+r.Unserved+r.Rejected != 19366 {
			t.Errorf("%s: %+v", r.Policy, r)
		}
	}
}

// TestSimulateFlagsDocumented: every flag of simulate (besides the replica
// flags, documented in docs/replica.md) is in docs/simulate.md.
func TestSimulateFlagsDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/simulate.md")
	if err != nil {
		t.Skipf("docs/simulate.md not readable: %v", err)
	}
	typ := reflect.TypeOf(SimulateCmd{})
	for i := range typ.NumField() {
		f := typ.Field(i)
		if _, ok := f.Tag.Lookup("embed"); ok {
			continue
		}
		if n := f.Tag.Get("name"); n != "" && !strings.Contains(string(doc), "`--"+n) {
			t.Errorf("docs/simulate.md does not document --%s", n)
		}
	}
}

// Issue 23 item 10: a request longer than a replica's KV cache can be
// served by no replica. It was one SLO miss, costing nothing, with no
// word; it is now a warning on stderr and a note under the table, and it
// stays counted (rejected in JSON and CSV) in every policy's misses.
func TestSimulateWarnsUnservable(t *testing.T) {
	p := filepath.Join(t.TempDir(), "long.csv")
	rows := "arrival_s,prompt_tokens,output_tokens\n0,100,50\n10,100,50\n20,50000000,10\n30,100,50\n"
	if err := os.WriteFile(p, []byte(rows), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runSimulate(t, "--trace", p, "--policy", "queue:24")
	want := "1 of 4 requests (25.0%) are longer than a replica's KV cache (the longest 50000010 prompt+output tokens"
	if code != 0 || !strings.Contains(errs, "warning: long.csv: "+want) || !strings.Contains(out, "note: long.csv: "+want) {
		t.Errorf("exit %d\nstdout:\n%s\nstderr:\n%s\nwant a warning and a note with %q", code, out, errs, want)
	}
	for _, r := range simulateJSON(t, "--trace", p, "--policy", "queue:24") {
		if r.Rejected != 1 || r.Misses < 1 {
			t.Errorf("%s: rejected %d misses %d, want 1 rejected, counted as a miss", r.Policy, r.Rejected, r.Misses)
		}
	}
}

// TestSimulatePD replays a short Poisson trace through a P/D pair: one row
// per policy with both pools' replica time adding up to the total, and the
// certified bound at or below optimal's.
func TestSimulatePD(t *testing.T) {
	code, out, errs := runSimulate(t, "--pd", "--trace", "synthetic:poisson,rate=2,duration=300,prompt=1000,output=100,seed=3",
		"--policy", "recommended", "--policy", "optimal", "--policy", "llmd-tokens", "--quiet", "--output", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rows []struct {
		Policy   string   `json:"policy"`
		Requests int64    `json:"requests"`
		Misses   int64    `json:"slo_misses"`
		Pre      float64  `json:"prefill_replica_minutes"`
		Dec      float64  `json:"decode_replica_minutes"`
		Total    float64  `json:"replica_minutes"`
		Bound    *float64 `json:"lower_bound_replica_minutes"`
		ITL      *float64 `json:"itl_p95_s"`
	}
	if err := json.Unmarshal([]byte(out), &rows); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(rows) != 3 || rows[0].Policy != "recommended" || rows[1].Policy != "optimal" || rows[2].Policy != "llmd-tokens" {
		t.Fatalf("rows %+v", rows)
	}
	for _, r := range rows {
		if r.Requests == 0 || r.Pre <= 0 || r.Dec <= 0 || math.Abs(r.Pre+r.Dec-r.Total) > 1e-9 || r.ITL == nil {
			t.Errorf("%s: %+v", r.Policy, r)
		}
	}
	if b := rows[1].Bound; b == nil || *b > rows[1].Total {
		t.Errorf("optimal's bound %v, total %v", b, rows[1].Total)
	}
	// --plot: the pair's four panels (replay.PlotPairAt), each policy in
	// the legend.
	svg := filepath.Join(t.TempDir(), "pd.svg")
	if code, _, errs := runSimulate(t, "--pd", "--trace", "synthetic:poisson,rate=2,duration=300,prompt=1000,output=100,seed=3",
		"--policy", "recommended", "--policy", "pd(fixed:1;fixed:2)", "--quiet", "--plot", svg); code != 0 || !strings.Contains(errs, "plot: wrote "+svg) {
		t.Fatalf("--plot: exit %d: %s", code, errs)
	}
	raw, err := os.ReadFile(svg)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := svgtest.Parse(string(raw))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"recommended", "pd(fixed:1;fixed:2)", "prefill pool", "decode pool"} {
		if _, ok := doc.Find(s); !ok {
			t.Errorf("plot lacks %q", s)
		}
	}
	// An upper-case extension is the format, as simulate reads it on one
	// pool (it passed the check, then failed after the replay, exit 1).
	upper := filepath.Join(t.TempDir(), "pd.PNG")
	if code, _, errs := runSimulate(t, "--pd", "--trace", "synthetic:poisson,rate=2,duration=60,prompt=1000,output=100,seed=3",
		"--policy", "pd(fixed:1;fixed:2)", "--quiet", "--plot", upper); code != 0 {
		t.Errorf("--plot pd.PNG: exit %d: %s", code, errs)
	} else if raw, err := os.ReadFile(upper); err != nil || !bytes.HasPrefix(raw, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("--plot pd.PNG: not a PNG file (the signature 89 50 4E 47 0D 0A 1A 0A): %v", err)
	}
	if code, _, errs := runSimulate(t, "--pd", "--policy", "knative:16", "--quiet"); code != 2 || !strings.Contains(errs, "knative") {
		t.Errorf("knative on a pair: exit %d, %s", code, errs)
	}
	if code, _, errs := runSimulate(t, "--pd", "--kv-link", "fast", "--quiet"); code != 2 || !strings.Contains(errs, "--kv-link") {
		t.Errorf("a bad --kv-link: exit %d, %s", code, errs)
	}
}

// TestSimulateLegendRecommendedReplica: on a replica whose cold start is
// not the reference's (--image-pull 10s: 10 + 16 + 30 = 56 s), the line
// under the table writes `recommended` out as it ran, lookahead 56 + 45 =
// 101 and hold 2 x 56 = 112 (it printed the reference's 136 and 182), and
// that string replayed beside the preset gives the same row.
func TestSimulateLegendRecommendedReplica(t *testing.T) {
	const shown = "demand:0.9,lookahead=101,downwindow=60,hold=112,rampbound=0,ttft:2,queuewait:0.4"
	code, out, errs := runSimulate(t, "--image-pull", "10s", "-p", "recommended", "-q")
	if code != 0 || !strings.Contains(out, "recommended: infscale's preset policy, "+shown+" here (") {
		t.Fatalf("exit %d, stderr %q; want the legend to write recommended out as %s:\n%s", code, errs, shown, out)
	}
	code, out, errs = runSimulate(t, "--image-pull", "10s", "-p", "recommended", "-p", shown, "-q", "-o", "json")
	var rows []simJSON
	if err := json.Unmarshal([]byte(out), &rows); code != 0 || err != nil || len(rows) != 2 {
		t.Fatalf("exit %d (%v), stderr %q, stdout %s", code, err, errs, out)
	}
	if a, b := rows[0], rows[1]; a.ReplicaMinutes != b.ReplicaMinutes || a.Misses != b.Misses || a.ScaleEvents != b.ScaleEvents {
		t.Errorf("recommended %+v\n%s %+v\nwant the same replay", a, shown, b)
	}
}

// TestSimulateOneRequest: a trace of one request says "1 request" in the
// header, of one pool and of a P/D pair ("1 requests" before).
func TestSimulateOneRequest(t *testing.T) {
	f := filepath.Join(t.TempDir(), "one.csv")
	if err := os.WriteFile(f, []byte("arrival_s,prompt_tokens,output_tokens\n0,100,20\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"--trace", f, "-p", "fixed:1", "-q"}, {"--trace", f, "--pd", "-p", "recommended", "-q"}} {
		code, out, errs := runSimulate(t, args...)
		if first, _, _ := strings.Cut(out, "\n"); code != 0 || !strings.HasPrefix(first, "trace one.csv: 1 request") || strings.Contains(first, "1 requests") {
			t.Errorf("%v: exit %d, stderr %q, header %q; want \"trace one.csv: 1 request ...\"", args, code, errs, first)
		}
	}
}
