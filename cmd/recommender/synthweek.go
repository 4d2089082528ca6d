package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/infscale/infscale/pkg/synthweek"
)

// SynthWeekCmd is `infscale synth-week`: a synthetic week of a vLLM
// Deployment's metrics (pkg/synthweek: a daily cycle, a weekend dip, one spike, a pod
// restart, a rollout, a scrape gap) written into a Prometheus TSDB
// directory with promtool, so that backtest and profile can be tried
// without a production Prometheus.
type SynthWeekCmd struct {
	Data        string        `required:"" placeholder:"DIR" help:"TSDB directory to create (must not exist, or be empty); start Prometheus with --storage.tsdb.path=DIR."`
	Promtool    string        `default:"promtool" placeholder:"PATH" help:"promtool binary (default ${default} from PATH; make tools builds tools/bin/promtool)."`
	Days        int           `default:"7" help:"Days to write, ending at the hour of --end."`
	End         string        `default:"now" placeholder:"T" help:"End of the days written, truncated to the hour: unix seconds, RFC3339, or relative to now (--end=-1d: a negative one after =, as a bare -1d reads as a flag) (default ${default})."`
	Scrape      time.Duration `default:"60s" placeholder:"D" help:"Scrape interval of the synthetic series (default ${default})."`
	Seed        uint64        `default:"1" help:"Seed of the arrivals."`
	OpenMetrics string        `name:"openmetrics" placeholder:"FILE" help:"Also keep the OpenMetrics text that was backfilled in FILE."`
}

// Run writes the OpenMetrics text, backfills it and says what to run next.
func (c *SynthWeekCmd) Run(e *env) error {
	if c.Days < 1 || c.Days > 90 {
		return invalidf("--days %d: want 1..90", c.Days)
	}
	if c.Scrape < 15*time.Second || c.Scrape > 10*time.Minute || c.Scrape%time.Second != 0 {
		return invalidf("--scrape %s: want whole seconds in 15s..10m", c.Scrape)
	}
	if ents, err := os.ReadDir(c.Data); err == nil && len(ents) > 0 {
		return invalidf("--data %s: not empty (want a new directory; promtool adds blocks to what is there)", c.Data)
	} else if err != nil && !errors.Is(err, os.ErrNotExist) {
		return invalidf("--data %s: %v", c.Data, err)
	}
	if c.OpenMetrics != "" {
		if st, err := os.Stat(c.OpenMetrics); err == nil && st.IsDir() {
			return invalidf("--openmetrics %s: is a directory; want the name of the file to keep", c.OpenMetrics)
		}
		if st, err := os.Stat(filepath.Dir(filepath.Clean(c.OpenMetrics))); err != nil || !st.IsDir() {
			return invalidf("--openmetrics %s: %s", c.OpenMetrics, noDir(filepath.Dir(filepath.Clean(c.OpenMetrics))))
		}
		if err := outputDirWritable("openmetrics", c.OpenMetrics, filepath.Dir(filepath.Clean(c.OpenMetrics))); err != nil {
			return err
		}
	}
	promtool, err := exec.LookPath(c.Promtool)
	if err != nil {
		return invalidf("--promtool %s: %v (make tools builds tools/bin/promtool; pass --promtool tools/bin/promtool)", c.Promtool, err)
	}
	end, err := parseTime(c.End, time.Now())
	if err != nil {
		return invalidf("--end %s: %v", c.End, err)
	}
	end = end.UTC().Truncate(time.Hour)
	cfg := synthweek.Config{Start: end.AddDate(0, 0, -c.Days), Days: c.Days, Scrape: c.Scrape, Seed: c.Seed}
	// backtest's and profile's --start take unix seconds from 0.
	if cfg.Start.Before(time.Unix(0, 0)) {
		return invalidf("--end %s: its %d days would start at %s, before 1970: want --end at or after %s",
			end.Format(time.RFC3339), c.Days, cfg.Start.Format(time.RFC3339), time.Unix(0, 0).UTC().AddDate(0, 0, c.Days).Format(time.RFC3339))
	}

	// Everything is written beside its destination under a temporary
	// name and renamed into place at the end: an interrupted or failed
	// run leaves neither a half-filled --data (which would refuse the
	// rerun) nor a truncated --openmetrics file.
	data := filepath.Clean(c.Data)
	if err := os.MkdirAll(filepath.Dir(data), 0o755); err != nil {
		return fmt.Errorf("synth-week: --data %s: %w", c.Data, err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(data), "."+filepath.Base(data)+".synth-week-*")
	if err != nil {
		return fmt.Errorf("synth-week: --data %s: %w", c.Data, err)
	}
	defer os.RemoveAll(tmp)
	om, blocks := filepath.Join(tmp, "week.om"), filepath.Join(tmp, "tsdb")
	if c.OpenMetrics != "" { // beside it, to be renamed into place
		f, err := os.CreateTemp(filepath.Dir(filepath.Clean(c.OpenMetrics)), "."+filepath.Base(c.OpenMetrics)+".*.tmp")
		if err != nil {
			return fmt.Errorf("synth-week: --openmetrics %s: %w", c.OpenMetrics, err)
		}
		f.Close()
		om = f.Name()
		defer os.Remove(om)
	}
	truth, err := writeOpenMetrics(om, cfg)
	if err != nil {
		flag, dest := "data", c.Data
		if c.OpenMetrics != "" {
			flag, dest = "openmetrics", c.OpenMetrics
		}
		return fmt.Errorf("synth-week: --%s %s: %w%s", flag, dest, err, noSpaceHint(err, nil, c.Days, c.Scrape))
	}
	// 54h blocks: a week in a few blocks rather than 84 two-hour ones.
	cmd := exec.CommandContext(e.ctx, promtool, "tsdb", "create-blocks-from", "openmetrics", "--quiet", "--max-block-duration=54h", om, blocks)
	cmd.WaitDelay = 5 * time.Second // a child still holding its output does not hold the command
	// promtool's own temporary directory (head*) goes in tmp, removed with
	// it: an interrupt kills promtool before it removes the directory.
	cmd.Env = append(os.Environ(), "TMPDIR="+tmp)
	out, err := cmd.CombinedOutput()
	if err != nil {
		if e.ctx.Err() != nil {
			return e.ctx.Err()
		}
		return fmt.Errorf("synth-week: --data %s: %s tsdb create-blocks-from openmetrics: %v%s\n%s", c.Data, promtool, err, noSpaceHint(err, out, c.Days, c.Scrape), out)
	}
	if !hasTSDBBlock(blocks) {
		return invalidf("--promtool %s: exited 0 but wrote no TSDB block (a directory with meta.json) in %s; is it Prometheus's promtool? (make tools builds tools/bin/promtool)", c.Promtool, c.Data)
	}
	if c.OpenMetrics != "" {
		if err := os.Chmod(om, 0o644); err != nil { // CreateTemp's 0600
			return fmt.Errorf("synth-week: --openmetrics %s: %w", c.OpenMetrics, err)
		}
		if err := os.Rename(om, c.OpenMetrics); err != nil {
			return fmt.Errorf("synth-week: --openmetrics %s: %w", c.OpenMetrics, err)
		}
	}
	if err := os.Remove(c.Data); err != nil && !errors.Is(err, os.ErrNotExist) { // empty, checked above
		return fmt.Errorf("synth-week: --data %s: %w", c.Data, err)
	}
	if err := os.Rename(blocks, c.Data); err != nil {
		return fmt.Errorf("synth-week: --data %s: %w", c.Data, err)
	}
	fmt.Fprintf(e.stdout, `synth-week: %s (%s .. %s, scrape %s) of a synthetic vLLM Deployment (namespace %q, deployment %q) in %s:
  %d requests, peak %02d:00 UTC, weekends x %g, %s

Serve it and try backtest and profile on it:
  prometheus --storage.tsdb.path=%s --storage.tsdb.retention.time=10y --config.file=/dev/null --web.listen-address=127.0.0.1:9090
  infscale backtest --prometheus-url http://127.0.0.1:9090 --selector '{namespace="llm"}' --replicas-query 'kube_deployment_spec_replicas{namespace="llm",deployment="chat"}'
  infscale profile --prometheus-url http://127.0.0.1:9090 --selector '{namespace="llm"}'
`, dayCount(c.Days), truth.Start.Format(time.RFC3339), truth.End.Format(time.RFC3339), truth.Scrape, "llm", "chat", c.Data,
		truth.Requests, truth.PeakHour, truth.WeekendFactor, weekEvents(truth), c.Data)
	return nil
}

// noSpaceHint says what to do when err (or promtool's output) is a full
// disk, a quota or a file size limit, else "". The size is measured on the
// 7-day week at a 60 s scrape: 119 MB of OpenMetrics and 4.3 MB of blocks,
// both beside their destination until renamed into place; it grows with
// days and with the scrape rate.
func noSpaceHint(err error, out []byte, days int, scrape time.Duration) string {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) || errors.Is(err, syscall.EFBIG) ||
		bytes.Contains(out, []byte("no space left on device")) || bytes.Contains(out, []byte("file too large")) {
		mb := math.Ceil(18 * float64(days) * float64(time.Minute) / float64(scrape))
		return fmt.Sprintf("; %s at a %s scrape: about %.0f MB while written (the OpenMetrics text, then the blocks, beside --data and --openmetrics): free that much there, or give them a file system with room", dayCount(days), shortDuration(scrape), mb)
	}
	return ""
}

// writeOpenMetrics writes the synthetic week cfg describes to path.
func writeOpenMetrics(path string, cfg synthweek.Config) (synthweek.Truth, error) {
	f, err := os.Create(path)
	if err != nil {
		return synthweek.Truth{}, err
	}
	bw := bufio.NewWriter(f)
	truth, err := synthweek.Write(bw, cfg)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return truth, err
}

// weekEvents names the spike and the scrape gap that fall inside the
// days written, [truth.Start, truth.End], with their times ("a spike
// 2026-12-03T04:00:00Z .. 2026-12-03T04:30:00Z"); one outside it (they are
// at fixed days of the week) is said to be, with the --days that would
// hold it ("no spike (it needs --days 3)").
func weekEvents(truth synthweek.Truth) string {
	event := func(name string, ev [2]time.Time) string {
		if !ev[0].Before(truth.Start) && !ev[1].After(truth.End) {
			return fmt.Sprintf("a %s %s .. %s", name, ev[0].Format(time.RFC3339), ev[1].Format(time.RFC3339))
		}
		day := 24 * time.Hour
		return fmt.Sprintf("no %s (it needs --days %d)", name, (ev[1].Sub(truth.Start)+day-1)/day)
	}
	return event("spike", truth.Spike) + ", " + event("scrape gap", truth.Gap)
}

// HistoryCmd is `infscale history`, synth-week's old name, kept hidden for
// one release: it warns on stderr and runs synth-week.
type HistoryCmd struct {
	SynthWeekCmd `embed:""`
}

// Run warns that the name goes and runs synth-week.
func (c *HistoryCmd) Run(e *env) error {
	fmt.Fprintln(e.stderr, "infscale: history is deprecated and goes in the next release; use synth-week")
	return c.SynthWeekCmd.Run(e)
}

// hasTSDBBlock reports whether dir holds a Prometheus TSDB block: a
// subdirectory with a meta.json, what promtool's create-blocks-from writes.
func hasTSDBBlock(dir string) bool {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return false
	}
	for _, e := range ents {
		if fi, err := os.Stat(filepath.Join(dir, e.Name(), "meta.json")); e.IsDir() && err == nil && fi.Mode().IsRegular() {
			return true
		}
	}
	return false
}

// dayCount is n days in words: "1 day", "7 days".
func dayCount(n int) string {
	if n == 1 {
		return "1 day"
	}
	return strconv.Itoa(n) + " days"
}
