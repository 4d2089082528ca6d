package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/infscale/infscale/internal/status"
	"github.com/infscale/infscale/pkg/replay"
	"github.com/infscale/infscale/pkg/replica"
	"github.com/infscale/infscale/pkg/trace"
)

// kvLink reads the value flag of --kv-link for replica m, as every --pd command
// does: bytes per second, or nvlink for the GPU catalog's link bandwidth
// per direction.
func kvLink(flag string, m *replica.Replica) (float64, error) {
	if strings.EqualFold(strings.TrimSpace(flag), "nvlink") {
		g := m.Config().GPU
		if g.Link != "nvlink" || !(g.LinkBandwidthBytesPerSecond > 0) {
			return 0, invalidf("--kv-link nvlink: %s has no NVLink in the GPU catalog (its link: %q); give the bandwidth, e.g. 25GB", g.Name, g.Link)
		}
		return g.LinkBandwidthBytesPerSecond, nil
	}
	v, err := parseLinkBytes(flag)
	if err != nil {
		return 0, invalidf("--kv-link: %v (or nvlink)", err)
	}
	if err := (replay.PDConfig{KVLinkBytesPerSecond: v}).Validate(); err != nil {
		return 0, invalidf("--kv-link %s: %v, e.g. 25GB (RDMA) or nvlink", flag, err)
	}
	return v, nil
}

// runPD is simulate --pd: every policy on a P/D pair of the replica.
func (c *SimulateCmd) runPD(e *env, src trace.Source, requests int64, cfg replay.Config, model *replica.Replica) error {
	link, err := kvLink(c.KVLink, model)
	if err != nil {
		return err
	}
	specs := c.Policy
	if len(specs) == 0 {
		specs = replay.PDDefaultPolicies
	}
	pols := make([]replay.PDPolicy, 0, len(specs))
	for _, s := range specs {
		p, err := replay.ParsePDPolicy(policySpec(s))
		if err != nil {
			return invalidf("--policy: %v", err)
		}
		pols = append(pols, p)
	}
	pd := replay.PDConfig{KVLinkBytesPerSecond: link}
	prog := status.NewProgress(e.stderr, progressLabel(len(pols)), len(pols), c.Quiet)
	res, errs := runEach(pols, cfg, 2, slices.ContainsFunc(pols, replay.PDPolicy.Searches), countOr(e.ctx, src, requests), e.stderr, prog, func(p replay.PDPolicy, cfg replay.Config) (replay.PDResult, error) {
		return replay.RunPD(e.ctx, src, p, cfg, pd)
	})
	prog.Done()
	for _, err := range errs {
		if err == nil {
			continue
		}
		var pe *fs.PathError
		if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) || errors.As(err, &pe) {
			return err
		}
		if errors.Is(err, replay.ErrPDSLO) {
			return invalidf("--slo-ttft %v with --kv-link %s: %v", c.SLOTTFT, c.KVLink, err)
		}
		return invalid(err)
	}
	notes := pdUnservable(res, cfg.SLOTTFT)
	for _, w := range notes {
		fmt.Fprintf(e.stderr, "warning: %s\n", w)
	}
	if c.Plot != "" {
		// As plotFileFormat checked it: .PNG is png (it was checked, then
		// refused after the replay, exit 1).
		format := strings.TrimPrefix(strings.ToLower(filepath.Ext(c.Plot)), ".")
		if err := writeRendered(c.Plot, func(w io.Writer) error { return replay.PlotPairAt(w, format, res, cfg.SLOTTFT, time.Time{}) }); err != nil {
			return fmt.Errorf("--plot %s: %w", c.Plot, err)
		}
		fmt.Fprintf(e.stderr, "plot: wrote %s\n", c.Plot)
	}
	rows := make([]replay.PDRow, len(res))
	for i, r := range res {
		rows[i] = replay.NewPDRow(r, c.Timeline)
	}
	switch c.Output {
	case "json":
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rows)
	case "csv":
		if c.Timeline {
			return replay.WritePDTimelineCSV(e.stdout, rows)
		}
		return replay.WritePDCSV(e.stdout, rows)
	}
	return writePDText(e.stdout, src.Name, cfg, link, model, rows, notes)
}

// pdUnservable are a pair's warnings, as unservable's: an SLO that no
// request meets even alone on idle pools (replay.SLOWarning; every policy
// replays the same trace, so the first one says it), then each policy's
// pools' shed at the backlog bound (replay.PDResult.ShedWarnings).
func pdUnservable(results []replay.PDResult, slo float64) []string {
	var out []string
	if len(results) > 0 {
		if w := results[0].SLOWarning(slo); w != "" {
			out = append(out, w)
		}
	}
	for _, r := range results {
		out = append(out, r.ShedWarnings()...)
	}
	return out
}

// writePDText writes the pair's table, its bounds, the legend and notes
// (pdUnservable's warnings, "note: " each, as writeSimText closes its
// table), then each row's timelines.
func writePDText(w io.Writer, traceName string, cfg replay.Config, link float64, m *replica.Replica, rows []replay.PDRow, notes []string) error {
	b := &strings.Builder{}
	if len(rows) > 0 {
		fmt.Fprintf(b, "trace %s: %s; P/D pair of %s on %s, KV %.0f KiB per token over %s/s; SLO TTFT %gs, period %gs\n\n",
			traceName, requestsText(rows[0].Requests), m.Config().Model.Name, m.Config().GPU.Name, m.KVBytesPerToken()/1024, formatBytes(link), cfg.SLOTTFT, cfg.Period)
	}
	policies := make([]string, len(rows))
	for i, r := range rows {
		policies[i] = r.Policy
	}
	head := []string{"SLO miss", "miss %", "TTFT p95", "ITL p95", "prefill rmin", "decode rmin", "total rmin", "peak P/D", "scale events"}
	width := writeHead(b, policies, head...)
	for _, r := range rows {
		itl := "-"
		if r.ITLP95 != nil {
			itl = strconv.FormatFloat(*r.ITLP95*1000, 'f', 1, 64) + "ms"
		}
		cells := []string{strconv.FormatInt(r.Misses, 10), replay.FormatPct(r.MissPct), fmtSecs(r.TTFTP95), itl,
			strconv.FormatFloat(r.PrefillMinutes, 'f', 1, 64), strconv.FormatFloat(r.DecodeMinutes, 'f', 1, 64),
			strconv.FormatFloat(r.TotalMinutes, 'f', 1, 64), fmt.Sprintf("%d/%d", r.PrefillPeak, r.DecodePeak), strconv.Itoa(r.ScaleEvents)}
		fmt.Fprintf(b, "%-*s", width, r.Policy)
		for i, c := range cells {
			fmt.Fprintf(b, "  %*s", len(head[i]), c)
		}
		b.WriteString("\n")
	}
	for _, r := range rows {
		if r.BoundMinutes != nil {
			fmt.Fprintf(b, "\n%s: certified lower bound %.1f replica-min (prefill pool's bound + decode busy time; docs/llm-d.md)\n", r.Policy, *r.BoundMinutes)
		}
	}
	for _, n := range notes {
		fmt.Fprintf(b, "\nnote: %s\n", n)
	}
	b.WriteString("\nrmin: replica-minutes of the pool (starting, ready and draining). TTFT: prefill queue + prefill + KV transfer + decode queue + first decode step. ITL p95: over output tokens, the decode pool's step time. peak P/D: the most replicas each pool asked for.\n")
	for _, r := range rows {
		for _, pool := range []struct {
			name string
			tl   []replay.TimelineEntry
		}{{"prefill", r.PrefillTimeline}, {"decode", r.DecodeTimeline}} {
			if len(pool.tl) == 0 {
				continue
			}
			explained := slices.ContainsFunc(pool.tl, func(s replay.TimelineEntry) bool { return s.Reason != "" })
			fmt.Fprintf(b, "\n%s (%s)\n%8s %8s %7s %5s %8s %8s %8s %8s %9s %6s", r.Policy, pool.name, "t", "arr/s", "desired", "ready", "starting", "draining", "running", "waiting", "TTFT p95", "misses")
			if explained {
				b.WriteString("  reason (metric)")
			}
			b.WriteString("\n")
			for _, s := range pool.tl {
				fmt.Fprintf(b, "%8.0f %8.2f %7d %5d %8d %8d %8s %8s %9s %6d", s.T, s.ArrivalRate, s.Desired, s.Ready, s.Starting, s.Draining,
					numP(s.Running), numP(s.Waiting), fmtSecs(s.TTFTP95), s.Misses)
				if explained {
					b.WriteString("  " + timelineReason(s.Reason, s.Metric))
				}
				b.WriteString("\n")
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func numP(p *float64) string {
	if p == nil {
		return "-"
	}
	return num0(*p)
}
