package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	neturl "net/url"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/infscale/infscale/internal/boundedfile"
	"github.com/infscale/infscale/internal/crashlog"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/kube"
	"github.com/infscale/infscale/pkg/modelserver"
)

// KubeSource is Inner (Prometheus or scraping) with the Kubernetes API for
// the targets that name a scaleTargetRef: their current replicas are the
// scale subresource's spec.replicas (as the HPA reads them), and in
// embedded mode the pages read are those of the workload's Ready pods
// (status.selector, from the namespace's pod informer; a pod scaled away
// is simply no longer listed), with the pods not yet Ready counted as
// unready (the HPA's rule). A target with an inferencePoolRef reads the
// pool's Ready pods of the workload, or with server: epp the pods of the
// pool's Endpoint Picker (readPool). Targets without a scaleTargetRef are
// Inner's alone. It is also the Writer of apply: true targets.
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
	// tokens maps this cycle's pod hosts (IP:port) of the targets with
	// scrape.bearer_token_file to that file, by target name.
	tokens map[string]map[string]string
}

// NewKubeSource wraps inner; isLeader gates writes (nil: always write).
// With a ScrapeSource inner, its Discover lists the Ready pods of a target
// whose scrape: is {port, path} (any Discover it had serves the others).
func NewKubeSource(inner Source, c *kube.Cluster, isLeader func() bool) *KubeSource {
	s := &KubeSource{Inner: inner, Cluster: c, Applier: &kube.Applier{Cluster: c, IsLeader: isLeader}, urls: map[string][]string{},
		pods: map[string][]*corev1.Pod{}, podOf: map[string]map[string]string{}, tokens: map[string]map[string]string{}}
	if ss, ok := inner.(*ScrapeSource); ok {
		client := *ss.Client // a copy: the caller's client is not changed
		client.Transport = &bearerTransport{base: client.Transport, tokenFile: s.tokenFile}
		ss.Client = &client
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
	// blind: the target's InferencePool could not be read, so no page
	// was: its signals are unknown, not those of an empty pool.
	blind bool
}

// ClockOffset is Inner's (Prometheus's clock offset), false when Inner
// tells none.
func (s *KubeSource) ClockOffset() (time.Duration, bool) {
	if c, ok := s.Inner.(clockTeller); ok {
		return c.ClockOffset()
	}
	return 0, false
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
	podURLs := false // a target whose pages are its pods': Inner reads after the pod lists
	for i, t := range targets {
		if t.ScaleTargetRef == nil {
			continue
		}
		podURLs = podURLs || t.Scrape.Pods != nil
		reads[i] = &kubeRead{}
		wg.Go(func() {
			defer crashlog.Recover()
			sem <- struct{}{}
			defer func() { <-sem }()
			s.readTarget(ctx, t, reads[i])
		})
	}
	// Otherwise Inner (Prometheus, or fixed scrape URLs) reads beside the
	// scale reads: an API server slow to answer took the cycle's period
	// from a Prometheus that answered at once.
	var out []Reading
	var took time.Duration
	if podURLs {
		wg.Wait()
		took = time.Since(start)
		out = s.Inner.Read(ctx, targets, now)
	} else {
		var inner sync.WaitGroup
		inner.Go(func() { defer crashlog.Recover(); out = s.Inner.Read(ctx, targets, now) })
		wg.Wait()
		took = time.Since(start)
		inner.Wait()
	}
	for i, kr := range reads {
		if kr == nil {
			continue
		}
		r := &out[i]
		if podURLs {
			r.Duration += took
		} else { // read beside Inner's
			r.Duration = max(r.Duration, took)
		}
		if kr.blind {
			r.Errors = nil // nothing was read: the pool's error says why
		}
		r.Errors = append(r.Errors, kr.errs...)
		if kr.err != nil {
			r.Errors = append(r.Errors, ReadError{Signal: "current", Reason: kube.Reason(kr.err), Err: kr.err})
			continue
		}
		if kr.blind {
			r.Obs, r.StuckKnown = unknownObservation(), false
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
		delete(s.tokens, t.Name)
		if f := t.Scrape.Pods.BearerTokenFile; f != "" {
			hosts := map[string]string{}
			for _, u := range urls {
				if pu, err := neturl.Parse(u); err == nil {
					hosts[pu.Host] = f
				}
			}
			s.tokens[t.Name] = hosts
		}
		s.mu.Unlock()
	}()
	if kr.err != nil {
		return
	}
	if t.InferencePoolRef != nil {
		urls, ready = s.readPool(ctx, t, kr)
		for i, u := range urls {
			podOf[u] = ready[i].Name
		}
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

// readPool reads a target's InferencePool and returns the pages to read
// with the pods they are on: the pool's Ready pods of the workload at
// scrape.port (else the pool's one targetPort), or with server: epp the
// Ready pods behind its endpointPickerRef Service at scrape.port (else
// their container port named metrics); kr.unready counts the pool's pods
// of the workload that are starting. A pool that cannot be read (missing,
// no selector, no EPP, the workload's pods not in it) sets kr.blind: no
// page is read and every signal stays unknown, never an idle pool. A pool
// whose Gateway does not accept it is a "pool" error each cycle
// (not_accepted), and its signals are read as usual.
func (s *KubeSource) readPool(ctx context.Context, t *config.Target, kr *kubeRead) ([]string, []*corev1.Pod) {
	fail := func(signal, reason string, err error) ([]string, []*corev1.Pod) {
		kr.blind = true
		kr.errs = append(kr.errs, ReadError{Signal: signal, Reason: reason, Err: err})
		return nil, nil
	}
	pool, err := s.Cluster.InferencePool(ctx, t.Namespace, t.InferencePoolRef.Name)
	if err != nil {
		return fail("pool", kube.PoolReason(err), err)
	}
	for _, p := range pool.Problems {
		kr.errs = append(kr.errs, ReadError{Signal: "pool", Reason: "not_accepted", Err: fmt.Errorf("%s: %s", pool, p)})
	}
	port, path := t.Scrape.Pods.Port, t.Scrape.Pods.Path
	epp := t.Server == modelserver.EPP
	if !epp && port == (intstr.IntOrString{}) {
		n, err := kube.PoolPort(pool)
		if err != nil {
			return fail("pods", "port", err)
		}
		port = intstr.FromInt32(n)
	}
	url := func(p *corev1.Pod) (string, error) { return kube.PodURL(p, port, path) }
	if epp { // the model servers are counted, not read
		url = func(*corev1.Pod) (string, error) { return "", nil }
	}
	pods, err := s.Cluster.PoolPods(ctx, pool, kr.w, url)
	if errors.Is(err, kube.ErrNotInPool) {
		return fail("pods", "not_in_pool", err)
	}
	if err != nil {
		return fail("pods", kube.Reason(err), err)
	}
	kr.unready = pods.Starting
	if !epp {
		if pods.URLErr != nil {
			kr.errs = append(kr.errs, ReadError{Signal: "pods", Reason: "port", Err: pods.URLErr})
		}
		return pods.URLs, pods.Ready
	}
	if port == (intstr.IntOrString{}) {
		port = intstr.FromString(config.DefaultEPPMetricsPort)
	}
	epps, err := s.Cluster.EPPPods(ctx, pool, func(p *corev1.Pod) (string, error) { return kube.PodURL(p, port, path) })
	if err != nil {
		return fail("epp", kube.PoolReason(err), err)
	}
	switch {
	case len(epps.URLs) == 0 && epps.URLErr != nil:
		return fail("epp", "port", epps.URLErr)
	case len(epps.URLs) == 0:
		return fail("epp", "empty", fmt.Errorf("%s: no Ready pod behind its Endpoint Picker Service %s", pool, pool.EPP.Name))
	case epps.URLErr != nil:
		kr.errs = append(kr.errs, ReadError{Signal: "epp", Reason: "port", Err: epps.URLErr})
	}
	return epps.URLs, epps.Ready
}

// tokenFile is the bearer_token_file of the target whose pod serves at
// host this cycle, "" for none.
func (s *KubeSource) tokenFile(host string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, hosts := range s.tokens {
		if f := hosts[host]; f != "" {
			return f
		}
	}
	return ""
}

// bearerTransport adds "Authorization: Bearer <token>" to the requests to
// a host tokenFile names a file for (read at each request: a rotated
// service-account token is picked up); other requests go out as they are.
type bearerTransport struct {
	base      http.RoundTripper
	tokenFile func(host string) string
}

func (b *bearerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	base := b.base
	if base == nil {
		base = http.DefaultTransport
	}
	f := b.tokenFile(req.URL.Host)
	if f == "" {
		return base.RoundTrip(req)
	}
	// A regular file of at most 1 MiB: a FIFO would block the scrape (its
	// read does not see the request's deadline), /dev/zero fill memory.
	tok, err := boundedfile.Read(f, 1<<20, "a bearer token", "want the token's file (a service account token is one)")
	if err != nil {
		return nil, fmt.Errorf("scrape.bearer_token_file: %w", err)
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(tok)))
	return base.RoundTrip(req)
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
