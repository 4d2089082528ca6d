package main

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"strconv"
	"strings"

	"github.com/infscale/infscale/internal/membudget"
	"github.com/infscale/infscale/pkg/replay"
	"github.com/infscale/infscale/pkg/trace"
)

// planReplays is how every command that runs replays side by side
// (simulate, backtest, profile, tune) fits them in the memory budget
// (replayBudget, membudget): n replays, each of pools pools, as many at
// once as the budget holds at their backlog bound (replay.AtOnce), and
// when that is fewer than the cores would run (replayCores) or the bound
// is lowered, sized again to the trace's requests (count: up to
// replay.MaxBacklog; 0 unknown), no replay holding more requests than the
// trace has. When search, one of them is optimal, whose search replays its
// seed policies side by side, as many as the cores, each a replay's worth:
// unless the budget holds the n replays and those cores - 1 more at once,
// its seeds run one at a time (SearchAtOnce 1: the same schedule, found
// more slowly), so that an optimal replay takes one replay's memory, as
// counted; without search that check, and the count it may take, is
// skipped. It returns the sizing and says why on w when running fewer or
// a lowered bound costs something (noteAtOnce).
func planReplays(w io.Writer, n, pools int, search bool, count func() int64) replay.Sizing {
	budget := replayBudget()
	cores := replayCores()
	var requests int64
	atOnce, backlog := replay.AtOnce(n, pools, 0, budget.Available)
	if atOnce < min(n, cores) || backlog < replay.MaxBacklog {
		if count != nil {
			requests = count()
		}
		atOnce, backlog = replay.AtOnce(n, pools, requests, budget.Available)
	}
	noteAtOnce(w, min(n, cores), pools, requests, atOnce, backlog, budget)
	s := replay.Sizing{AtOnce: atOnce, Backlog: backlog}
	fits := func(m int) bool {
		k, b := replay.AtOnce(m, pools, requests, budget.Available)
		return k >= m && b == replay.MaxBacklog
	}
	if search && cores > 1 && !fits(n+cores-1) {
		if requests == 0 && count != nil {
			requests = count()
		}
		if !fits(n + cores - 1) {
			s.SearchAtOnce = 1
		}
	}
	return s
}

// replaySizer is planReplays as replay.Config.Size takes it (backtest and
// profile, through replay.RunAll), its note kept in notes to be said after
// the progress line.
func replaySizer(notes *strings.Builder) func(n, pools int, search bool, requests func() int64) replay.Sizing {
	return func(n, pools int, search bool, requests func() int64) replay.Sizing {
		return planReplays(notes, n, pools, search, requests)
	}
}

// traceCount returns a func counting src's requests, up to
// replay.MaxBacklog (past it a replay's bound is reached anyway); 0 when
// the pass fails or ctx ends (the replays then report it).
func traceCount(ctx context.Context, src trace.Source) func() int64 {
	return func() int64 {
		n, err := trace.Count(ctx, src, replay.MaxBacklog)
		if err != nil {
			return 0
		}
		return n
	}
}

// countOr is traceCount unless requests, src's count read already (simulate's
// up-front scan of a file or a --window), is known (> 0): that, up to
// replay.MaxBacklog, without a second pass.
func countOr(ctx context.Context, src trace.Source, requests int64) func() int64 {
	if requests > 0 {
		return func() int64 { return min(requests, replay.MaxBacklog) }
	}
	return traceCount(ctx, src)
}

// replayBudget is the memory budget planReplays sizes replays to; a
// variable for tests.
var replayBudget = membudget.Now

// replayCores is how many replays the machine runs at once
// (GOMAXPROCS); a variable for tests.
var replayCores = func() int { return runtime.GOMAXPROCS(0) }

// noteAtOnce says on w, when planReplays runs fewer than n replays at once
// (atOnce; n the policies or the cores, the fewer: below that the run is
// longer) or lowers their backlog bound below replay.MaxBacklog, why: the
// bytes n replays at their bound would take against the budget's. A
// lowered bound changes a policy's figures only where its backlog reaches
// it, and its shed warning then says the bound was lowered. requests is
// the trace's count when planReplays sized the replays to it (0: not).
func noteAtOnce(w io.Writer, n, pools int, requests int64, atOnce int, backlog int64, b membudget.Budget) {
	mib := func(x int64) string { return strconv.FormatFloat(float64(x)/(1<<20), 'f', 1, 64) + " MiB" }
	one := int64(pools) * replay.BacklogRequestBytes * replay.MaxBacklog
	if requests > 0 && requests < replay.MaxBacklog && backlog == replay.MaxBacklog {
		// Sized to the trace: its requests (tune's: times its largest
		// bursts: stress) are what a replay holds at most.
		one = int64(pools) * replay.BacklogRequestBytes * requests
		if atOnce < n {
			fmt.Fprintf(w, "note: %d replays holding up to %d requests each (%s each at most) would take more than the %s this process may still take (memory limit %s, GOMEMLIMIT): running %d at a time (the figures are the same, the run longer)\n",
				n, requests, mib(one), mib(b.Available), mib(b.Limit), atOnce)
		}
		return
	}
	limit := "memory limit " + mib(b.Limit) + ", GOMEMLIMIT"
	switch {
	case backlog < replay.MaxBacklog:
		fmt.Fprintf(w, "note: one replay at its backlog bound (%d requests in the system, %s) takes more than the %s this process may still take (%s): the policies run one at a time, each keeping at most %d requests in the system; a policy with more sheds the later arrivals (counted unserved, warned below); give the process more memory to replay with the full bound\n",
			replay.MaxBacklog, mib(one), mib(b.Available), limit, backlog)
	case atOnce < n:
		fmt.Fprintf(w, "note: %d replays at their backlog bound (%d requests in the system, %s each) would take more than the %s this process may still take (%s): running %d at a time (the figures are the same, the run longer)\n",
			n, replay.MaxBacklog, mib(one), mib(b.Available), limit, atOnce)
	}
}
