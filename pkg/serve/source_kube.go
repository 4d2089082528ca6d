package serve

import (
	"context"
	"errors"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/kube"
)

// KubeSource is Inner (Prometheus or scraping) with the Kubernetes API for
// the targets that name a scaleTargetRef: their current replicas are the
// scale subresource's spec.replicas (as the HPA reads them), and in
// embedded mode the pages read are those of the workload's Ready pods
// (status.selector, from the namespace's pod informer; a pod scaled away
// is simply no longer listed), with the pods not yet Ready counted as
// unready (the HPA's rule). Targets without a scaleTargetRef are Inner's
// alone. It is also the Writer of apply: true targets.
type KubeSource struct {
	// Inner reads the signals.
	Inner Source
	// Cluster is the API.
	Cluster *kube.Cluster
	// Applier writes spec.replicas (its IsLeader gates the writes).
	Applier *kube.Applier
	// Parallel bounds the concurrent scale reads of a cycle (default 16).
	Parallel int

	mu   sync.Mutex
	urls map[string][]string // this cycle's pod URLs by target name
	// pods and podOf (URL → pod name) are this cycle's Ready pods of the
	// targets with pod_deletion_cost (deletioncost.go).
	pods  map[string][]*corev1.Pod
	podOf map[string]map[string]string
}

// NewKubeSource wraps inner; isLeader gates writes (nil: always write).
// With a ScrapeSource inner, its Discover lists the Ready pods of a target
// whose scrape: is {port, path} (any Discover it had serves the others).
func NewKubeSource(inner Source, c *kube.Cluster, isLeader func() bool) *KubeSource {
	s := &KubeSource{Inner: inner, Cluster: c, Applier: &kube.Applier{Cluster: c, IsLeader: isLeader}, urls: map[string][]string{},
		pods: map[string][]*corev1.Pod{}, podOf: map[string]map[string]string{}}
	if ss, ok := inner.(*ScrapeSource); ok {
		prev := ss.Discover
		ss.Discover = func(t *config.Target) []string {
			if t.Scrape.Pods != nil {
				s.mu.Lock()
				defer s.mu.Unlock()
				return s.urls[t.Key()]
			}
			if prev != nil {
				return prev(t)
			}
			return t.Scrape.URLs
		}
	}
	return s
}

// Name is Inner's name.
func (s *KubeSource) Name() string { return s.Inner.Name() }

// RefOf is the workload of a target with a scaleTargetRef.
func RefOf(t *config.Target) kube.Ref {
	return kube.Ref{Namespace: t.Namespace, CrossVersionObjectReference: *t.ScaleTargetRef}
}

// kubeRead is what the API gave for one target this cycle.
type kubeRead struct {
	w       kube.Workload
	err     error // the scale read
	unready int
	errs    []ReadError
}

// Read reads the scale (and in embedded mode the pods) of every target
// with a scaleTargetRef, concurrently, then Inner, then sets Current from
// spec.replicas. A failed scale read is a ReadError "current" (reason
// kube.Reason: not_found, forbidden, ...) and Current is Inner's.
func (s *KubeSource) Read(ctx context.Context, targets []*config.Target, now time.Time) []Reading {
	start := time.Now()
	reads := make([]*kubeRead, len(targets))
	par := s.Parallel
	if par <= 0 {
		par = 16
	}
	sem := make(chan struct{}, par)
	var wg sync.WaitGroup
	for i, t := range targets {
		if t.ScaleTargetRef == nil {
			continue
		}
		reads[i] = &kubeRead{}
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			s.readTarget(ctx, t, reads[i])
		})
	}
	wg.Wait()
	took := time.Since(start)
	out := s.Inner.Read(ctx, targets, now)
	for i, kr := range reads {
		if kr == nil {
			continue
		}
		r := &out[i]
		r.Duration += took
		r.Errors = append(r.Errors, kr.errs...)
		if kr.err != nil {
			r.Errors = append(r.Errors, ReadError{Signal: "current", Reason: kube.Reason(kr.err), Err: kr.err})
			continue
		}
		r.Obs.Current, r.CurrentKnown = int(kr.w.Replicas), true
		if targets[i].PodDeletionCost {
			s.mu.Lock()
			r.Outstanding = byPod(r.Outstanding, s.podOf[targets[i].Key()])
			s.mu.Unlock()
		}
		if targets[i].Scrape.Pods != nil {
			r.Obs.Unready = min(kr.unready, max(0, r.Obs.Current-r.Obs.Reporting))
		}
	}
	return out
}

func (s *KubeSource) readTarget(ctx context.Context, t *config.Target, kr *kubeRead) {
	kr.w, kr.err = s.Cluster.Scale(ctx, RefOf(t))
	if t.Scrape.Pods == nil {
		return
	}
	var urls []string
	var ready []*corev1.Pod
	podOf := map[string]string{}
	defer func() {
		s.mu.Lock()
		s.urls[t.Key()] = urls
		if t.PodDeletionCost {
			s.pods[t.Key()], s.podOf[t.Key()] = ready, podOf
		}
		s.mu.Unlock()
	}()
	if kr.err != nil {
		return
	}
	pods, err := s.Cluster.WorkloadPods(ctx, kr.w, func(p *corev1.Pod) (string, error) {
		return kube.PodURL(p, t.Scrape.Pods.Port, t.Scrape.Pods.Path)
	})
	if err != nil {
		reason := kube.Reason(err)
		if errors.Is(err, kube.ErrNoSelector) {
			reason = "no_selector"
		}
		kr.errs = append(kr.errs, ReadError{Signal: "pods", Reason: reason, Err: err})
		return
	}
	kr.unready = pods.Starting
	urls, ready = pods.URLs, pods.Ready
	for i, u := range urls {
		podOf[u] = ready[i].Name
	}
	if pods.URLErr != nil { // one per target and cycle: the pods share a template
		kr.errs = append(kr.errs, ReadError{Signal: "pods", Reason: "port", Err: pods.URLErr})
	}
}

// Write sets the workload's spec.replicas to desired (kube.Applier.Apply:
// refused under an HPA or a KEDA ScaledObject, kube.ErrNotLeader off the
// Lease, conflict-safe); wrote is false when it already held desired.
func (s *KubeSource) Write(ctx context.Context, t *config.Target, desired int) (bool, error) {
	a, err := s.Applier.Apply(ctx, RefOf(t), int32(desired))
	return a.Wrote, err
}

// Writer writes a target's decided replicas to its workload (apply: true).
type Writer interface {
	// Write makes the workload run desired replicas; wrote is false when
	// it already did. kube.ErrNotLeader: this instance does not write.
	Write(ctx context.Context, t *config.Target, desired int) (wrote bool, err error)
}
