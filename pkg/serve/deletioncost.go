package serve

import (
	"context"
	"errors"
	"math"
	"time"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/kube"
	"github.com/infscale/infscale/pkg/scrape"
)

// outstanding is running + waiting of each page that answered, by URL
// (scrape.Aggregate of the page alone: the same sums as the target's);
// a stuck page (answered, not voting) counts 0.
func outstanding(urls []string, pages, voting []*scrape.Page) map[string]float64 {
	out := make(map[string]float64, len(urls))
	for i, p := range pages {
		if p == nil {
			continue
		}
		if voting[i] == nil {
			out[urls[i]] = 0
			continue
		}
		tot := scrape.Aggregate(voting[i : i+1])
		if n := tot.Running + tot.Waiting; !math.IsNaN(n) {
			out[urls[i]] = n
		}
	}
	return out
}

// CostWriter sets pod-deletion-cost on a target's pods (KubeSource).
type CostWriter interface {
	// SetDeletionCosts sets controller.kubernetes.io/pod-deletion-cost of
	// t's pods from outstanding (pod name → running + waiting):
	// kube.PlanDeletionCosts, then kube.SetDeletionCosts. kube.ErrNotLeader:
	// this instance does not write.
	SetDeletionCosts(ctx context.Context, t *config.Target, outstanding map[string]float64) (patched, deferred int, err error)
}

// SetDeletionCosts implements CostWriter on the pods listed this cycle,
// gated and bounded by the Applier's leadership (kube.Applier.WriteContext:
// no patch is sent after it ended).
func (s *KubeSource) SetDeletionCosts(ctx context.Context, t *config.Target, outstanding map[string]float64) (int, int, error) {
	wctx, cancel, err := s.Applier.WriteContext(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer cancel()
	s.mu.Lock()
	pods := s.pods[t.Name]
	s.mu.Unlock()
	if len(pods) == 0 {
		return 0, 0, nil
	}
	plan, deferred := kube.PlanDeletionCosts(pods, outstanding, 0)
	n, err := kube.SetDeletionCosts(wctx, s.Cluster.Client, pods[0].Namespace, plan)
	return n, deferred, kube.LeadershipEnded(wctx, err)
}

// byPod re-keys a reading's Outstanding from scrape URLs to pod names.
func byPod(out map[string]float64, podOf map[string]string) map[string]float64 {
	if out == nil {
		return nil
	}
	m := make(map[string]float64, len(out))
	for u, n := range out {
		if p, ok := podOf[u]; ok {
			m[p] = n
		}
	}
	return m
}

// reportCosts logs a target's deletion-cost patches, set before a
// scale-down's write so that the ReplicaSet removes the idlest pods
// (docs/ha.md). Off the Lease nothing is written; a failure (a timeout
// included) is counted in infscale_deletion_cost_errors_total by
// kube.Reason, logged as one line (kube.CostError: the count, one example,
// the RBAC rule when refused) at most once a minute per target, and does
// not hold the decision.
func (l *Loop) reportCosts(j *writeJob, now time.Time) {
	name := j.t.key
	switch {
	case errors.Is(j.costErr, kube.ErrNotLeader):
		return
	case j.costErr != nil:
		reason := kube.Reason(j.costErr)
		l.metrics.CostError(name, reason)
		if suppressed, ok := l.limiter.allow(now, name+"\x00cost"); ok {
			l.log.Error("pod deletion costs not all set", "target", name, "set", j.costSet, "err", j.costErr, "reason", reason, "suppressed_since_last", suppressed)
		}
	}
	if j.costSet > 0 || j.costDeferred > 0 {
		l.log.Info("pod deletion costs set", "target", name, "pods", j.costSet, "deferred", j.costDeferred)
	}
}

// costWriterOf is src as a CostWriter when it sets deletion costs.
func costWriterOf(src Source) CostWriter {
	if w, ok := src.(CostWriter); ok {
		return w
	}
	return nil
}
