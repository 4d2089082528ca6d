package promql

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"
)

// Fallback backoff: a batch Prometheus rejects (bad_data) is retried
// target by target, and each target whose own query is rejected is left
// out of the batch (so the others keep one query per signal) and retried
// alone after a backoff: FallbackBackoff after the first failure, doubling
// on each repeated failure up to MaxFallbackBackoff, each with "equal"
// jitter (a uniformly random half of it added to the other half) so that
// many targets do not retry in step. A batch rejected although every
// target's own query passes (the batch itself is refused: its size, a
// proxy) is retried target by target under the same backoff; in between
// its targets carry the batch's error (unknown, not 0). The periods count
// on the evaluation time t, never the wall clock, and restart with a new
// Plan (a config reload).
const (
	FallbackBackoff    = time.Minute
	MaxFallbackBackoff = 16 * time.Minute
)

// backoff is the retry bookkeeping of one rejected query.
type backoff struct {
	fails int
	next  time.Time   // no retry before
	err   *QueryError // the last rejection
}

// fallbackKey names a target's query of one signal, or (target -1 - first
// target) a batch.
type fallbackKey struct {
	signal Signal
	target int
}

// fallbackState is a Plan's backoff bookkeeping; safe for Run's
// concurrent batches.
type fallbackState struct {
	mu sync.Mutex
	m  map[fallbackKey]*backoff
}

func newFallbackState() *fallbackState { return &fallbackState{m: map[fallbackKey]*backoff{}} }

// empty reports whether no key has a backoff.
func (f *fallbackState) empty() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.m) == 0
}

func (f *fallbackState) get(k fallbackKey) *backoff {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.m[k]
}

// fail records a rejection at t and schedules the next retry.
func (f *fallbackState) fail(k fallbackKey, t time.Time, err *QueryError) *backoff {
	f.mu.Lock()
	defer f.mu.Unlock()
	b := f.m[k]
	if b == nil {
		b = &backoff{}
		f.m[k] = b
	}
	b.fails++
	d := min(FallbackBackoff<<min(b.fails-1, 10), MaxFallbackBackoff)
	b.next = t.Add(d/2 + time.Duration(rand.Int64N(int64(d/2)+1)))
	b.err = err
	return b
}

func (f *fallbackState) clear(k fallbackKey) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.m, k)
}

// backedOff is the error target j carries while its retry waits: b's
// rejection, quoting j's own query; n > 1 when b is a batch's of n
// targets.
func backedOff(b *backoff, j job, n int) *QueryError {
	var cause error = b.err.Err
	if n > 1 {
		cause = batchError{n: n, err: cause}
	}
	return &QueryError{Reason: b.err.Reason, Query: j.short(),
		Err: fmt.Errorf("%w (rejected %d time(s); next retry after %s)", cause, b.fails, b.next.UTC().Format(time.RFC3339))}
}

// runBounded runs one batch with the bounded fallback (see
// FallbackBackoff) and returns each job's answer (out[k] for jobs[k]) and
// the queries sent. q is the text of jobs (textOf), formLen its
// form-encoded length when known, else 0.
func (e *Evaluator) runBounded(ctx context.Context, fb *fallbackState, sig Signal, jobs []job, q queryText, formLen int, t time.Time) ([]answer, int) {
	if len(jobs) == 1 {
		out, _ := e.runBatch(ctx, jobs, q, formLen, t)
		return out, 1
	}
	out := make([]answer, len(jobs))
	sent := 0
	keep, at := jobs, []int(nil) // keep[i] is jobs[at[i]] (jobs[i] while at is nil)
	if !fb.empty() {             // else no target backs off: the whole batch (usual case)
		keep, at = make([]job, 0, len(jobs)), make([]int, 0, len(jobs))
		for k, j := range jobs {
			fk := fallbackKey{sig, j.target}
			b := fb.get(fk)
			if b == nil {
				keep, at = append(keep, j), append(at, k)
				continue
			}
			if t.Before(b.next) {
				out[k] = answer{value: math.NaN(), err: backedOff(b, j, 1)}
				continue
			}
			a, err := e.runBatch(ctx, []job{j}, plainText(j.text.String()), 0, t)
			sent++
			if err != nil && err.Reason == ReasonBadData {
				fb.fail(fk, t, err)
			} else {
				fb.clear(fk)
			}
			out[k] = a[0]
		}
	}
	pos := func(i int) int {
		if at == nil {
			return i
		}
		return at[i]
	}
	if len(keep) == 0 {
		return out, sent
	}
	if len(keep) < len(jobs) {
		q, formLen = textOf(keep), 0
	}
	a, err := e.runBatch(ctx, keep, q, formLen, t)
	sent++
	if err == nil && len(keep) > 1 && len(a) > 0 && warningsOmitted(a[0].warn) {
		// Prometheus lists a query's first 10 warnings and counts the
		// rest: a storage warning (a partial answer: Partial) among those
		// left out cannot be told from PromQL's own, which a batch gets
		// for each of its targets' expressions. Asked alone, each target's
		// answer lists its own few.
		for i, j := range keep {
			one, _ := e.runBatch(ctx, []job{j}, plainText(j.text.String()), 0, t)
			sent++
			out[pos(i)] = one[0]
		}
		return out, sent
	}
	if err == nil || err.Reason != ReasonBadData || len(keep) == 1 {
		for i, v := range a {
			out[pos(i)] = v
		}
		return out, sent
	}
	bk := fallbackKey{sig, -1 - jobs[0].target}
	if b := fb.get(bk); b != nil && t.Before(b.next) {
		for i, j := range keep {
			out[pos(i)] = answer{value: math.NaN(), err: backedOff(b, j, len(keep)), warn: a[i].warn}
		}
		return out, sent
	}
	rejected := 0
	for i, j := range keep {
		one, err := e.runBatch(ctx, []job{j}, plainText(j.text.String()), 0, t)
		sent++
		if err != nil && err.Reason == ReasonBadData {
			fb.fail(fallbackKey{sig, j.target}, t, err)
			rejected++
		}
		out[pos(i)] = one[0]
	}
	if rejected == 0 {
		fb.fail(bk, t, err) // the batch itself is refused
	} else {
		fb.clear(bk)
	}
	return out, sent
}
