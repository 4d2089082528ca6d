package main

import (
	"bytes"
	"context"
	"math"
	"strings"
	"testing"

	"github.com/infscale/infscale/internal/membudget"
)

// budgetFor sets the memory budget simulate sizes its replays to
// (replayBudget) for the test: avail bytes still free under a 1 GiB limit.
func budgetFor(t *testing.T, avail int64) {
	old, oldCores := replayBudget, replayCores
	replayBudget = func() membudget.Budget { return membudget.Budget{Limit: 1 << 30, Available: avail} }
	replayCores = func() int { return 8 }
	t.Cleanup(func() { replayBudget, replayCores = old, oldCores })
}

// simUnder runs args under a budget of avail bytes (budgetFor) and returns
// stdout and stderr; a run that does not exit 0 fails t.
func simUnder(t *testing.T, args []string, avail int64) (string, string) {
	t.Helper()
	budgetFor(t, avail)
	var out, errb bytes.Buffer
	if code := run(context.Background(), args, nil, &out, &errb); code != exitOK {
		t.Fatalf("budget %d: exit %d: %s", avail, code, errb.String())
	}
	return out.String(), errb.String()
}

// TestSimulateMemoryBudget: simulate ran every policy at once whatever
// their queues could take (up to 512 MiB each at the backlog bound,
// several GiB for the default set). With the bound lowered to 1000
// requests a replay takes at most 1000 x 32 = 32,000 bytes: a budget of
// 70,000 bytes holds 2 at once (the figures the same as with no limit),
// one of 16,000 not even one, so the bound drops to what it holds,
// 16,000 / 32 = 500, rounded down to a power of two: 256, and a policy
// far short (one to three replicas, about 10 requests a second each,
// against 40) is warned of at 256.
func TestSimulateMemoryBudget(t *testing.T) {
	lowerBacklog(t, 1000)
	args := []string{"simulate", "--trace", "synthetic:poisson,rate=40,duration=20m,prompt=2000,output=400,seed=1",
		"-p", "fixed:1", "-p", "fixed:2", "-p", "fixed:3", "--quiet", "--output", "csv"}
	sim := func(avail int64) (string, string) { t.Helper(); return simUnder(t, args, avail) }
	free, freeErr := sim(math.MaxInt64)
	if strings.Contains(freeErr, "at a time") || strings.Contains(freeErr, "one at a time") {
		t.Errorf("no limit: stderr %q; want no note of the budget", freeErr)
	}
	two, twoErr := sim(70_000)
	if two != free {
		t.Errorf("2 at a time: stdout\n%s\nwant as with no limit\n%s", two, free)
	}
	if !strings.Contains(twoErr, "note: 3 replays at their backlog bound (1000 requests in the system, 0.0 MiB each) would take more than the 0.1 MiB this process may still take (memory limit 1024.0 MiB, GOMEMLIMIT): running 2 at a time") {
		t.Errorf("2 at a time: stderr %q; want the note running 2 at a time", twoErr)
	}
	_, lowErr := sim(16_000)
	if !strings.Contains(lowErr, "note: one replay at its backlog bound (1000 requests in the system, 0.0 MiB) takes more than the 0.0 MiB this process may still take (memory limit 1024.0 MiB, GOMEMLIMIT): the policies run one at a time, each keeping at most 256 requests in the system") {
		t.Errorf("low budget: stderr %q; want the note naming 256 requests", lowErr)
	}
	if !strings.Contains(lowErr, "warning: fixed:1: 256 requests were in the system") || !strings.Contains(lowErr, "(the replay's memory bound, lowered from 1000 to what the process's memory holds: give it more to replay with the full bound)") {
		t.Errorf("low budget: stderr %q; want fixed:1's shed warning at 256, saying the bound was lowered", lowErr)
	}
}

// TestSimulateMemoryBudgetCores: a budget that holds as many replays as
// the machine runs at once says nothing: 3 policies on 2 cores with room
// for 2 at their bound (70,000 bytes at 32,000 each) run as fast as
// with room for all 3 (a note every run under a container's limit, where
// 10 policies at 512 MiB each never fit, was noise).
func TestSimulateMemoryBudgetCores(t *testing.T) {
	lowerBacklog(t, 1000)
	budgetFor(t, 70_000)
	replayCores = func() int { return 2 }
	var out, errb bytes.Buffer
	args := []string{"simulate", "--trace", "synthetic:poisson,rate=4,duration=5m,seed=1", "-p", "fixed:1", "-p", "fixed:2", "-p", "fixed:3", "--quiet"}
	if code := run(context.Background(), args, nil, &out, &errb); code != exitOK || strings.Contains(errb.String(), "note:") {
		t.Errorf("exit %d, stderr %q: want exit 0 and no note", code, errb.String())
	}
}

// TestSimulateMemoryBudgetTraceCount: a replay holds at most the trace's
// requests, so the budget is weighed against those, not the full bound.
// The reference trace's 15,783 requests take at most 15,783 x 32 =
// 505,056 bytes a replay: 2 MiB (2,097,152 bytes) holds 4 at once, so two
// policies run together at the full bound with no note, where the full
// bound (512 MiB a replay) had them one at a time with the bound lowered
// to the floor, 65,536, and a note every run. 1 MiB holds 2 of them, not
// 3: the note names the trace's count.
func TestSimulateMemoryBudgetTraceCount(t *testing.T) {
	args := []string{"simulate", "--quiet", "--output", "csv", "-p", "fixed:1", "-p", "fixed:2", "-p", "fixed:3"}
	sim := func(avail int64) (string, string) { t.Helper(); return simUnder(t, args, avail) }
	free, _ := sim(math.MaxInt64)
	out, errs := sim(2 << 20)
	if out != free || strings.Contains(errs, "note:") {
		t.Errorf("2 MiB: stderr %q, stdout\n%s\nwant no note and the figures with no limit\n%s", errs, out, free)
	}
	out, errs = sim(1 << 20)
	if out != free || !strings.Contains(errs, "note: 3 replays holding up to 15783 requests each (0.5 MiB each at most) would take more than the 1.0 MiB this process may still take (memory limit 1024.0 MiB, GOMEMLIMIT): running 2 at a time") {
		t.Errorf("1 MiB: stderr %q; want the note running 2 at a time, the figures unchanged", errs)
	}
}
