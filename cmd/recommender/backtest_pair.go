package main

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/infscale/infscale/internal/status"
	"github.com/infscale/infscale/pkg/backtest"
	"github.com/infscale/infscale/pkg/replay"
)

// runPair is backtest on a P/D target: each pool's history, the pair's
// arrivals rebuilt (backtest.ReconstructPair) and replayed through the
// pair (replay.RunPD) under the pair policies, beside what each pool ran.
func (c *BacktestCmd) runPair(e *env, res resolved) error {
	if c.Calibrate != "" {
		return invalidf("--calibrate with a prefill/decode pair: the fit reads one pool's latencies; calibrate on one role with --prometheus-url and that role's --selector, then give --calibration FILE")
	}
	if err := c.plotOK(); err != nil {
		return err
	}
	specs := c.Policy
	if len(specs) == 0 {
		specs = replay.PDDefaultPolicies
	}
	var pols []replay.PDPolicy
	if res.pair.policy != nil {
		pols = append(pols, *res.pair.policy)
	}
	for i, s := range specs {
		p, err := replay.ParsePDPolicy(policySpec(s))
		if err != nil {
			return invalidf("--policy #%d: %v", i+1, err)
		}
		pols = append(pols, p)
	}
	c.fromTarget(res.replica, true)
	model, err := c.Replica()
	if err != nil {
		return err
	}
	link, err := kvLink(c.KVLink, model)
	if err != nil {
		return err
	}
	prog := status.NewProgress(e.stderr, "backtest", 1, c.Quiet)
	defer prog.Done()
	w, st, err := res.fetchPair(e, "backtest", c.MaxGap, func(f float64) { prog.Set(0.2 * f) })
	if err != nil {
		return err
	}
	var notes strings.Builder // the memory budget's, said after the progress line
	rep, err := backtest.RunPair(e.ctx, w, backtest.PairConfig{Policies: pols, Seed: c.Seed, GPUs: float64(model.Config().TP),
		PD: replay.PDConfig{KVLinkBytesPerSecond: link},
		Replay: replay.Config{Model: model, SLOTTFT: c.SLOTTFT.Seconds(), Period: c.Period.Seconds(), Timeline: c.Plot != "",
			Progress: func(now, end float64) { prog.Set(0.2 + 0.8*now/end) }, Size: replaySizer(&notes)}})
	prog.Done()
	fmt.Fprint(e.stderr, notes.String())
	if err != nil {
		if errors.Is(err, replay.ErrPDSLO) {
			return invalidf("--slo-ttft %v with --kv-link %s: %v", c.SLOTTFT, c.KVLink, err)
		}
		return fmt.Errorf("backtest: %w", err)
	}
	for _, r := range rep.Policies {
		for _, w := range r.ShedWarnings() {
			fmt.Fprintf(e.stderr, "warning: %s\n", w)
		}
	}
	if w := rep.SLOWarning(); w != "" {
		fmt.Fprintf(e.stderr, "warning: %s\n", w)
	}
	rep.Fetch = st
	if c.Plot != "" {
		if err := plotPairBacktest(e.stderr, c.Plot, rep); err != nil {
			return fmt.Errorf("--plot: %w", err)
		}
	}
	switch c.Output {
	case "json":
		return rep.WriteJSON(e.stdout)
	case "csv":
		return rep.WriteCSV(e.stdout)
	}
	return rep.WriteText(e.stdout)
}

// fetchPair reads both pools' histories over res's grid and rebuilds the
// pair's workload; progress gets the share of queries done. Errors name
// the pool, and for a pool without traffic its success query and the
// config key that chooses it.
func (res resolved) fetchPair(e *env, cmd string, maxGap time.Duration, progress func(float64)) (backtest.PairWorkload, backtest.FetchStats, error) {
	var hs [2]backtest.History
	var st backtest.FetchStats
	var success [2]string
	for i, t := range res.pair.roles {
		h, s, err := backtest.Fetch(e.ctx, res.api, t, res.grid, func(done, total int) {
			progress((float64(i) + float64(done)/float64(total)) / 2)
		})
		if err != nil {
			return backtest.PairWorkload{}, st, fmt.Errorf("%s: %s, %s pool: %w", cmd, res.pair.of, pairRoles[i], err)
		}
		if len(s.Queried) > 0 {
			success[i] = s.Queried[0]
		}
		hs[i] = h
		st.Queries, st.Points, st.Duration = st.Queries+s.Queries, st.Points+s.Points, st.Duration+s.Duration
		st.Warnings, st.Queried = append(st.Warnings, s.Warnings...), append(st.Queried, s.Queried...)
	}
	w, err := backtest.ReconstructPair(hs[0], hs[1], backtest.Options{GapThreshold: maxGap})
	if err != nil {
		var pe *backtest.PoolError
		if errors.As(err, &pe) && errors.Is(err, backtest.ErrNoTraffic) {
			i := 0
			if pe.Role == pairRoles[1].String() {
				i = 1
			}
			over := res.grid.Start.Format(time.RFC3339) + ".." + res.grid.End().Format(time.RFC3339)
			if i == 1 {
				// The decode pool is read first: is the prefill pool
				// silent too (a role label or selector that matches
				// neither)? Then both are named.
				if _, perr := backtest.Reconstruct(hs[0], backtest.Options{GapThreshold: maxGap}); errors.Is(perr, backtest.ErrNoTraffic) {
					check := res.pair.check[0]
					if res.pair.check[1] != check {
						check += "; " + res.pair.check[1]
					}
					return w, st, fmt.Errorf("%s: %s, both pools: %w: prefill %s, decode %s over %s (check %s)", cmd, res.pair.of,
						backtest.ErrNoTraffic, success[0], success[1], over, check)
				}
			}
			check := res.pair.check[i]
			if why := backtest.DiagnoseNoTraffic(e.ctx, res.api, res.pair.roles[i], res.grid); why != "" {
				check = why + "; check " + check
			} else {
				check = "check " + check
			}
			return w, st, fmt.Errorf("%s: %s, %s pool: %w: %s over %s (%s)", cmd, res.pair.of, pe.Role,
				pe.Err, success[i], over, check)
		}
		if errors.Is(err, backtest.ErrTooManyRequests) {
			return w, st, fmt.Errorf("%s: %s, %w over %s..%s; %s a shorter range (--start, --end)", cmd, res.pair.of, err,
				res.grid.Start.Format(time.RFC3339), res.grid.End().Format(time.RFC3339), cmd)
		}
		return w, st, fmt.Errorf("%s: %s, %w", cmd, res.pair.of, err)
	}
	return w, st, nil
}
