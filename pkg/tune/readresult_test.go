package tune

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/config"
)

// TestReadResultDir: a tune.dir that holds no NAME.json yet is "no result
// yet" (the CronJob has not run); one that does not exist, or is a file,
// is an error naming it (a misspelt path or an unmounted volume read as
// "no result yet" forever, and serve never said so).
func TestReadResultDir(t *testing.T) {
	dir := t.TempDir()
	if _, ok, err := ReadResult(dir, "chat"); ok || err != nil {
		t.Errorf("empty dir: ok %v, err %v; want no result and no error", ok, err)
	}
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, want string }{
		{filepath.Join(dir, "missing"), "tune.dir " + filepath.Join(dir, "missing") + " does not exist: want the directory infscale tune --shard writes"},
		{file, "not a directory"}, // open f/chat.json: the system's ENOTDIR, naming the path
	} {
		if _, ok, err := ReadResult(c.dir, "chat"); ok || err == nil || !strings.Contains(err.Error(), c.dir) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: ok %v, err %v; want %q", c.dir, ok, err, c.want)
		}
	}
}

// TestResultMatches: a result decides only for the configuration it was
// tuned for. chat's tune: block asks max_miss 0.001 (0.1%), slo_ttft 2s,
// at a 15 s interval, on an H100 with Llama-3-8B; a result tuned at 1%
// misses, a 1 s SLO, a 30 s period or on an A100 judged "holds" on other
// terms, and each is named with both values. A result that does not record the SLO and period (0) is
// compared on its budget alone.
func TestResultMatches(t *testing.T) {
	f, err := config.Parse([]byte(`prometheus: {url: "http://prometheus:9090"}
targets:
- name: chat
  selector: '{namespace="llm"}'
  metrics: [{type: queue, target: 24}]
  maxReplicaCount: 8
  replica: {gpu: h100-sxm, model: llama-3-8b}
  tune: {max_miss: 0.001}
`), "tune.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tg := &f.Targets[0]
	same := TargetResult{Outcome: Outcome{MaxMissPct: 0.1}, SLOTTFT: 2, Period: 15}
	for _, c := range []struct {
		r    TargetResult
		want string
	}{
		{same, ""},
		{TargetResult{Outcome: Outcome{MaxMissPct: 0.1}}, ""},
		{TargetResult{Outcome: Outcome{MaxMissPct: 1}, SLOTTFT: 2, Period: 15}, "tuned with max_miss 0.01 (the target's is 0.001): from another configuration of target chat"},
		{TargetResult{Outcome: Outcome{MaxMissPct: 0}, SLOTTFT: 2, Period: 15}, "tuned with max_miss 0 (the target's is 0.001): from another configuration of target chat"},
		{TargetResult{Outcome: Outcome{MaxMissPct: 0.1}, SLOTTFT: 1, Period: 30}, "tuned with slo_ttft 1s (the target's is 2s), a 30s period (pollingInterval is 15s): from another configuration of target chat"},
		// The replica: H100 and the same model at TP 1 (left out) match;
		// an A100 does not.
		{TargetResult{Outcome: Outcome{MaxMissPct: 0.1}, Replica: &ReplicaRef{GPU: "h100-sxm", Model: "llama-3-8b", TP: 1}}, ""},
		{TargetResult{Outcome: Outcome{MaxMissPct: 0.1}, Replica: &ReplicaRef{GPU: "a100-80gb", Model: "llama-3-8b", TP: 1}},
			"tuned with replica {gpu: a100-80gb, model: llama-3-8b, tp: 1} (the target's is {gpu: h100-sxm, model: llama-3-8b, tp: 1}): from another configuration of target chat"},
	} {
		err := c.r.Matches(tg, 15*time.Second)
		if got := fmt.Sprint(err); (c.want == "" && err != nil) || (c.want != "" && got != c.want) {
			t.Errorf("%+v: %v\nwant %q", c.r, err, c.want)
		}
	}
}

// TestReplicaOfModelConfig: a target whose replica: names its model by a
// Hugging Face config.json (model_config, which serve's config accepts)
// is tuned on that model: the replica was read from model alone, so every run failed
// with `unknown model ""`. Qwen2.5-7B-Instruct's config.json has 28
// layers, hidden size 3584 and 4 KV heads.
func TestReplicaOfModelConfig(t *testing.T) {
	r, _, err := replicaOf(&config.Replica{GPU: "h100-sxm", ModelConfig: "../replica/testdata/hf/qwen2.5-7b-instruct.json"})
	if err != nil {
		t.Fatal(err)
	}
	if m := r.Config().Model; m.Layers != 28 || m.Hidden != 3584 || m.KVHeads != 4 {
		t.Errorf("model %d layers, hidden %d, %d KV heads; want 28, 3584, 4", m.Layers, m.Hidden, m.KVHeads)
	}
}

// TestResultCovered: a result says how much history it was tuned on, as
// tune.history is written, and whether that is short of the span asked
// by more than an hour: 15 days of a 90d ask (a Prometheus keeping 15
// days) is short; 6 days 23 hours 30 minutes of a 7d ask is not.
func TestResultCovered(t *testing.T) {
	for _, c := range []struct {
		history float64
		asked   time.Duration
		want    string
		short   bool
	}{
		{15 * 86400, 90 * 24 * time.Hour, "15d", true},
		{7*86400 - 1800, 7 * 24 * time.Hour, "6d23h30m", false},
		{3780, 2 * time.Hour, "1h3m", false},
		{3600, 3 * time.Hour, "1h", true},
	} {
		r := TargetResult{History: c.history}
		if got, short := r.Covered(c.asked); got != c.want || short != c.short {
			t.Errorf("%g s of %s: %q %v, want %q %v", c.history, c.asked, got, short, c.want, c.short)
		}
	}
}

// TestReadResultHoldsByFigures: serve adopts a result that says it holds,
// so a file whose own figures say otherwise is refused, naming the figure:
// at a budget of 0.1%, 50 of 1000 requests missed out of sample is 5%;
// the second stressed copy (x2) at 0.2% is over it too; two stressed
// figures under one name do not say which stress each is. The same figures
// with holds false are read (a rejected candidate, exported as such), and
// so are figures at the budget exactly (Choose's <=).
func TestReadResultHoldsByFigures(t *testing.T) {
	c := Candidate{Metric: "queue", Target: 16}
	ok := Figures{Requests: 1000, Misses: 1, MissPct: 0.1}
	for _, tc := range []struct {
		name string
		o    Outcome
		want string
	}{
		{"out of sample", Outcome{Holds: true, MaxMissPct: 0.1, InSample: ok, OutOfSample: Figures{Requests: 1000, Misses: 50, MissPct: 5}},
			"not a tune result: it says it holds, but its out_of_sample misses 5% of requests, over its budget of 0.1%"},
		{"stress", Outcome{Holds: true, MaxMissPct: 0.1, InSample: ok, OutOfSample: ok, Stress: []Figures{ok, {Requests: 1000, Misses: 2, MissPct: 0.2}}, StressNames: []string{"x1.5", "x2"}},
			"it says it holds, but its stress x2 misses 0.2% of requests, over its budget of 0.1%"},
		{"names", Outcome{Holds: true, MaxMissPct: 0.1, InSample: ok, OutOfSample: ok, Stress: []Figures{ok, ok}, StressNames: []string{"x1.5"}},
			"it has 2 stressed figures for 1 stress names"},
		{"does not hold", Outcome{Holds: false, MaxMissPct: 0.1, InSample: ok, OutOfSample: Figures{Requests: 1000, Misses: 50, MissPct: 5}}, ""},
		{"at the budget", Outcome{Holds: true, MaxMissPct: 0.1, InSample: ok, OutOfSample: ok, Stress: []Figures{ok}, StressNames: []string{"x1.5"}}, ""},
	} {
		dir := t.TempDir()
		if err := WriteResult(dir, TargetResult{Target: "chat", At: time.Now(), Policy: c.Policy(), Candidate: c, Outcome: tc.o}); err != nil {
			t.Fatal(err)
		}
		_, got, err := ReadResult(dir, "chat")
		if tc.want == "" {
			if err != nil || !got {
				t.Errorf("%s: ok %v, err %v; want it read", tc.name, got, err)
			}
			continue
		}
		if got || err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "chat.json")) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: ok %v, err %v; want %q", tc.name, got, err, tc.want)
		}
	}
}

// TestResultCalibrationContents: a result records the calibration's
// fitted figures (their digest) beside its path. A refit written over the
// same file (mfu 0.4627 -> 0.5) is another replica: the result is not
// taken, and the error says the files are the same and their contents
// not. The same figures with another source note and layout, or a result
// written before digests, still match.
func TestResultCalibrationContents(t *testing.T) {
	orig, err := os.ReadFile("../../examples/vllm-0.21-h100-llama-3.1-8b.calibration.json")
	if err != nil {
		t.Fatal(err)
	}
	cal := filepath.Join(t.TempDir(), "cal.json")
	load := func(data []byte) *config.Target {
		t.Helper()
		if err := os.WriteFile(cal, data, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := config.Parse(fmt.Appendf(nil, `prometheus: {url: "http://prometheus:9090"}
targets:
- name: chat
  selector: '{namespace="llm"}'
  metrics: [{type: queue, target: 24}]
  maxReplicaCount: 8
  replica: {gpu: h100-sxm, model: llama-3.1-8b, calibration: %q}
  tune: {max_miss: 0.001}
`, cal), "tune.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return &f.Targets[0]
	}
	tg := load(orig)
	_, ref, err := replicaOf(tg.Replica)
	if err != nil {
		t.Fatal(err)
	}
	if ref.CalibrationDigest == "" || ref.CalibrationDigest != tg.Replica.CalibrationDigest() {
		t.Fatalf("digest tuned on %q, loaded %q: want the same, not empty", ref.CalibrationDigest, tg.Replica.CalibrationDigest())
	}
	r := TargetResult{Outcome: Outcome{MaxMissPct: 0.1}, SLOTTFT: 2, Period: 15, Replica: ref}
	if err := r.Matches(tg, 15*time.Second); err != nil {
		t.Errorf("the file tuned on: %v", err)
	}

	relaid := strings.Replace(strings.Join(strings.Fields(string(orig)), " "), `"source": "hand fit`, `"source": "copied from the hand fit`, 1)
	if err := r.Matches(load([]byte(relaid)), 15*time.Second); err != nil {
		t.Errorf("the same figures, another source and layout: %v", err)
	}

	refit := strings.Replace(string(orig), `"mfu": 0.4627`, `"mfu": 0.5`, 1)
	err = r.Matches(load([]byte(refit)), 15*time.Second)
	if err == nil || !strings.Contains(err.Error(), "calibration: "+cal+" (digest "+ref.CalibrationDigest[:8]+")") || !strings.Contains(err.Error(), "the same files, other contents") {
		t.Errorf("refitted over the same file: %v; want the replica refused, naming both digests and saying the contents differ", err)
	}
	old := r
	old.Replica = &ReplicaRef{GPU: ref.GPU, Model: ref.Model, TP: ref.TP, Calibration: ref.Calibration}
	if err := old.Matches(load([]byte(refit)), 15*time.Second); err != nil {
		t.Errorf("a result without digests (written before them): %v", err)
	}
}

// TestTuneOnTheReplicaAsLoaded: a calibration refitted over its file
// after the configuration was loaded (serve running, not yet reloaded).
// A run reads the file again; before, it replayed on the new figures and
// recorded their digest, which the loaded configuration's does not
// match: serve refused its in-process result as stale ("a reload changed
// the target's terms during the run"), though nothing was reloaded, and
// tuned again at the next look, a week's replays every minute. The run
// now fails at once, naming the file and the reload that takes it.
func TestTuneOnTheReplicaAsLoaded(t *testing.T) {
	orig, err := os.ReadFile("../../examples/vllm-0.21-h100-llama-3.1-8b.calibration.json")
	if err != nil {
		t.Fatal(err)
	}
	cal := filepath.Join(t.TempDir(), "cal.json")
	if err := os.WriteFile(cal, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := config.Parse(fmt.Appendf(nil, `prometheus: {url: "http://prometheus:9090"}
targets:
- name: chat
  selector: '{namespace="llm"}'
  metrics: [{type: queue, target: 24}]
  maxReplicaCount: 8
  replica: {gpu: h100-sxm, model: llama-3.1-8b, calibration: %q}
  tune: {max_miss: 0.001}
`, cal), "tune.yaml")
	if err != nil {
		t.Fatal(err)
	}
	tg := &f.Targets[0]
	refit := strings.Replace(string(orig), `"mfu": 0.4627`, `"mfu": 0.5`, 1)
	if err := os.WriteFile(cal, []byte(refit), 0o644); err != nil {
		t.Fatal(err)
	}
	_, ref, err := replicaOf(tg.Replica)
	if err == nil {
		r := TargetResult{Outcome: Outcome{MaxMissPct: 0.1}, SLOTTFT: 2, Period: 15, Replica: ref}
		t.Fatalf("refitted after the load: tuned on %s, which the loaded configuration refuses (%v); want an error", ref, r.Matches(tg, 15*time.Second))
	}
	if !strings.Contains(err.Error(), cal) || !strings.Contains(err.Error(), "changed since the configuration was loaded") || !strings.Contains(err.Error(), "SIGHUP") {
		t.Errorf("error %q: want the file named, said changed since the load, and the reload that takes it", err)
	}
	// The same figures again (the file put back): tuned as before.
	if err := os.WriteFile(cal, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := replicaOf(tg.Replica); err != nil {
		t.Errorf("the file as loaded: %v", err)
	}
}

// TestResultMatchesScaleToZero: a result tuned for a target at zero
// (min 0 and its cooldownPeriod, 120 s) decides only while the target
// scales to zero with that cooldown. Before, a reload to minReplicaCount
// 1 (no zero: block) kept it, and its min=0 and cooldown=120 took the
// target to zero with nothing to wake it; a reload to cooldownPeriod 10m
// kept it too, deciding with the 120 s it was tuned on. A cooldown above
// a year is compared as a year's, the cooldown it was replayed with. A
// result tuned at a floor does not decide for a target reloaded to scale
// to zero: before, it was kept, and rejected by Adapt (min beside a zero:
// block) until the next run, up to every later.
func TestResultMatchesScaleToZero(t *testing.T) {
	target := func(zero string) *config.Target {
		f, err := config.Parse([]byte(`prometheus: {url: "http://prometheus:9090"}
targets:
- name: chat
  selector: '{namespace="llm"}'
  metrics: [{type: queue, target: 24}]
  maxReplicaCount: 8
  replica: {gpu: h100-sxm, model: llama-3-8b}
  tune: {max_miss: 0.001}
`+zero), "tune.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return &f.Targets[0]
	}
	const held = "  minReplicaCount: 0\n  zero: {held: 'sum(held)', cooldownPeriod: %s}\n"
	atZero := func(cooldown float64) TargetResult {
		return TargetResult{Outcome: Outcome{MaxMissPct: 0.1}, SLOTTFT: 2, Period: 15, Candidate: Candidate{Metric: "queue", Target: 16, Options: []Option{
			{Name: "min", Value: 0, Default: 1, Key: "minReplicaCount"},
			{Name: "cooldown", Value: cooldown, Default: -1, Key: "zero.cooldownPeriod", Duration: true}}}}
	}
	floor := TargetResult{Outcome: Outcome{MaxMissPct: 0.1}, SLOTTFT: 2, Period: 15, Candidate: Candidate{Metric: "queue", Target: 16, Options: []Option{
		{Name: "min", Value: 2, Default: 1, Key: "minReplicaCount"}}}}
	for _, c := range []struct {
		name string
		r    TargetResult
		t    *config.Target
		want string
	}{
		{"same cooldown", atZero(120), target(fmt.Sprintf(held, "120s")), ""},
		{"cooldown as seconds", atZero(120), target(fmt.Sprintf(held, "120")), ""},
		{"a year and more", atZero(365 * 86400), target(fmt.Sprintf(held, "2147483647")), ""},
		{"no longer at zero", atZero(120), target(""),
			"tuned with scale to zero, cooldownPeriod 120s (the target keeps minReplicaCount 1): from another configuration of target chat"},
		{"another cooldown", atZero(120), target(fmt.Sprintf(held, "10m")),
			"tuned with scale to zero, cooldownPeriod 120s (the target's is 10m): from another configuration of target chat"},
		{"a floor's result", floor, target(""), ""},
		// Replayed at a floor, never at zero: its "holds" is not the
		// target's (and Adapt refuses its min=2 beside the zero: block).
		{"a floor's result, the target now at zero", floor, target(fmt.Sprintf(held, "120s")),
			"tuned with minReplicaCount 2, not at zero (the target scales to zero: minReplicaCount 0, cooldownPeriod 2m): from another configuration of target chat"},
		{"a floor of 1 (the default, not written)", TargetResult{Outcome: Outcome{MaxMissPct: 0.1}, SLOTTFT: 2, Period: 15, Candidate: Candidate{Metric: "queue", Target: 16}},
			target(fmt.Sprintf(held, "120s")),
			"tuned with minReplicaCount 1, not at zero (the target scales to zero: minReplicaCount 0, cooldownPeriod 2m): from another configuration of target chat"},
	} {
		err := c.r.Matches(c.t, 15*time.Second)
		if got := fmt.Sprint(err); (c.want == "" && err != nil) || (c.want != "" && got != c.want) {
			t.Errorf("%s: %v\nwant %q", c.name, err, c.want)
		}
	}
}

// TestTuneOnTheReplicaGone: a calibration removed, or overwritten with
// something that is not one, after the configuration was loaded fails the
// run naming the file, and says it was read at the load and what to do
// (put it back, or reload serve). Before, the error was the read's alone
// (`open cal.json: no such file or directory`), which for a file serve
// had loaded and decided on said nothing of why it was read again.
func TestTuneOnTheReplicaGone(t *testing.T) {
	orig, err := os.ReadFile("../../examples/vllm-0.21-h100-llama-3.1-8b.calibration.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		after func(cal string) error
	}{
		{"removed", os.Remove},
		{"not a calibration", func(cal string) error { return os.WriteFile(cal, []byte("{garbage"), 0o644) }},
	} {
		cal := filepath.Join(t.TempDir(), "cal.json")
		if err := os.WriteFile(cal, orig, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := config.Parse(fmt.Appendf(nil, `prometheus: {url: "http://prometheus:9090"}
targets:
- name: chat
  selector: '{namespace="llm"}'
  metrics: [{type: queue, target: 24}]
  maxReplicaCount: 8
  replica: {gpu: h100-sxm, model: llama-3.1-8b, calibration: %q}
  tune: {max_miss: 0.001}
`, cal), "tune.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if err := c.after(cal); err != nil {
			t.Fatal(err)
		}
		_, _, err = replicaOf(f.Targets[0].Replica)
		if err == nil || !strings.Contains(err.Error(), cal) || !strings.Contains(err.Error(), "since the configuration was loaded") || !strings.Contains(err.Error(), "SIGHUP") {
			t.Errorf("%s: %v; want the file named, said read at the load, and the reload or the file put back", c.name, err)
		}
	}
}

// TestTuneOnTheModelConfigGone: as TestTuneOnTheReplicaGone, for a
// replica's model_config (a Hugging Face config.json) removed after the
// load.
func TestTuneOnTheModelConfigGone(t *testing.T) {
	orig, err := os.ReadFile("../replica/testdata/hf/qwen2.5-7b-instruct.json")
	if err != nil {
		t.Fatal(err)
	}
	mc := filepath.Join(t.TempDir(), "config.json")
	if err := os.WriteFile(mc, orig, 0o644); err != nil {
		t.Fatal(err)
	}
	f, err := config.Parse(fmt.Appendf(nil, `prometheus: {url: "http://prometheus:9090"}
targets:
- name: chat
  selector: '{namespace="llm"}'
  metrics: [{type: queue, target: 24}]
  maxReplicaCount: 8
  replica: {gpu: h100-sxm, model_config: %q}
  tune: {max_miss: 0.001}
`, mc), "tune.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(mc); err != nil {
		t.Fatal(err)
	}
	_, _, err = replicaOf(f.Targets[0].Replica)
	if err == nil || !strings.Contains(err.Error(), mc) || !strings.Contains(err.Error(), "since the configuration was loaded") || !strings.Contains(err.Error(), "SIGHUP") {
		t.Errorf("%v; want the file named, said read at the load, and the reload or the file put back", err)
	}
}

// TestTerms: Terms changes with each term Matches compares (max_miss,
// slo_ttft, the period, the replica, scale to zero and its cooldown) and
// with nothing else (mode, every, the metrics).
func TestTerms(t *testing.T) {
	target := func(tuneBlock, extra string) *config.Target {
		f, err := config.Parse([]byte(`prometheus: {url: "http://prometheus:9090"}
targets:
- name: chat
  selector: '{namespace="llm"}'
  metrics: [{type: queue, target: 24}]
  maxReplicaCount: 8
  tune: `+tuneBlock+"\n"+extra), "tune.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return &f.Targets[0]
	}
	const h100 = "  replica: {gpu: h100-sxm, model: llama-3-8b}\n"
	base := Terms(target("{max_miss: 0.001}", h100), 15*time.Second)
	if len(base) != 16 {
		t.Errorf("terms %q, want 16 hex digits", base)
	}
	for _, c := range []struct {
		name   string
		t      *config.Target
		period time.Duration
		same   bool
	}{
		{"the same", target("{max_miss: 0.001}", h100), 15 * time.Second, true},
		{"mode, every", target("{max_miss: 0.001, mode: adopt, every: 2h}", h100), 15 * time.Second, true},
		{"max_miss", target("{max_miss: 0.01}", h100), 15 * time.Second, false},
		{"slo_ttft", target("{max_miss: 0.001, slo_ttft: 1s}", h100), 15 * time.Second, false},
		{"period", target("{max_miss: 0.001}", h100), 30 * time.Second, false},
		{"replica", target("{max_miss: 0.001}", "  replica: {gpu: a100-80gb, model: llama-3-8b}\n"), 15 * time.Second, false},
		{"scale to zero", target("{max_miss: 0.001}", h100+"  minReplicaCount: 0\n  zero: {held: 'sum(held)', cooldownPeriod: 2m}\n"), 15 * time.Second, false},
	} {
		if got := Terms(c.t, c.period); (got == base) != c.same {
			t.Errorf("%s: terms %s beside %s, want the same: %v", c.name, got, base, c.same)
		}
	}
	z := func(cd string) string {
		return Terms(target("{max_miss: 0.001}", h100+"  minReplicaCount: 0\n  zero: {held: 'sum(held)', cooldownPeriod: "+cd+"}\n"), 15*time.Second)
	}
	if z("2m") == z("3m") || z("2m") != z("120") {
		t.Errorf("cooldown 2m %s, 3m %s, 120 %s: want 2m and 120 alike, 3m another", z("2m"), z("3m"), z("120"))
	}
}

// TestReadResultNotJSONPositioned: a result file that is not JSON (a
// hand edit, a truncated copy) is refused naming the file, the line and
// column, and what to do; it said only "invalid character 'q' looking
// for beginning of value", without where or what to do.
func TestReadResultNotJSONPositioned(t *testing.T) {
	dir := t.TempDir()
	path := ResultPath(dir, "chat")
	for _, c := range []struct{ body, want string }{
		{"{\n  \"target\": \"chat\",\n  \"policy\": queue\n}\n", path + ": line 3:13: invalid character 'q' looking for beginning of value"},
		{`{"target": "chat"`, path + ": line 1:18: unexpected end of the JSON (truncated file?)"},
	} {
		if err := os.WriteFile(path, []byte(c.body), 0o644); err != nil {
			t.Fatal(err)
		}
		_, ok, err := ReadResult(dir, "chat")
		if ok || err == nil || !strings.HasPrefix(err.Error(), c.want) || !strings.Contains(err.Error(), "infscale tune --shard") {
			t.Errorf("%q: ok %v, err %v; want %q and what to do", c.body, ok, err, c.want)
		}
	}
}
