package tune

import (
	"context"
	"errors"
	"sync"

	"github.com/infscale/infscale/pkg/replay"
	"github.com/infscale/infscale/pkg/trace"
)

// evaluator runs replays on a pool of workers.
type evaluator struct {
	ctx     context.Context
	cfg     Config
	workers int
	mu      sync.Mutex
	done    int
	total   int
}

type job struct {
	pol replay.Policy
	src trace.Source
	out *replay.Result
}

func (e *evaluator) run(jobs []job) error {
	e.mu.Lock()
	e.total += len(jobs)
	e.mu.Unlock()
	ch := make(chan job)
	errs := make([]error, e.workers)
	var wg sync.WaitGroup
	for w := range e.workers {
		wg.Go(func() {
			for j := range ch {
				if errs[w] != nil {
					continue
				}
				rc := e.cfg.Replay
				rc.Timeline, rc.Progress = false, nil
				r, err := replay.Run(e.ctx, j.src, j.pol, rc)
				if err != nil {
					errs[w] = err
					continue
				}
				*j.out = r
				e.mu.Lock()
				e.done++
				d, t := e.done, e.total
				e.mu.Unlock()
				if e.cfg.Progress != nil {
					e.cfg.Progress(d, t)
				}
			}
		})
	}
	for _, j := range jobs {
		ch <- j
	}
	close(ch)
	wg.Wait()
	return errors.Join(errs...)
}
