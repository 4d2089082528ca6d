package serve

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strings"
	"time"

	"github.com/infscale/infscale/internal/sourcekey"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/modelserver"
	"github.com/infscale/infscale/pkg/recommend"
	"github.com/infscale/infscale/pkg/scrape"
)

// readEPP reads a target whose scrape: URLs are llm-d Endpoint Pickers
// (server: epp; usually one, several for EPP replicas of one pool): the
// pool's signals come from the page with the most ready endpoints
// (replicas of the EPP see the same pool), Current and Reporting are its
// ready endpoints, Queued the endpoints with a request waiting (at most the
// ready ones); request and token rates, the TTFT, queue-time and ITL
// quantiles are summed over the pages (each EPP replica counts the
// requests that went through it), and with zero.flow_control so is the
// held count (each holds its own queue).
func (s *ScrapeSource) readEPP(ctx context.Context, t *config.Target, now time.Time) Reading {
	start := time.Now()
	urls, pages, errs, keys := s.loadPages(ctx, t, modelserver.EPP)
	r := Reading{Obs: unknownObservation(), StuckKnown: true}
	if err := eppPools(t, urls, pages, errs); err != nil {
		r.Errors = append(r.Errors, *err)
		r.Duration = time.Since(start)
		return r
	}
	var best *scrape.Page
	held, heldOK, unread := 0.0, true, 0
	var badFlows []ReadError // pages whose flow-control queue is there but not read
	for i, p := range pages {
		if errs[i] != nil || p == nil || p.Pool == nil {
			pages[i] = nil
			heldOK = false
			unread++
			err := errs[i]
			if err == nil {
				err = fmt.Errorf("%s: not an EPP page", urls[i])
			}
			err = eppAuthHint(t, err)
			r.Errors = append(r.Errors, ReadError{Signal: "page", Reason: scrapeReason(err), Err: err})
			continue
		}
		if finite(p.Pool.Ready) && (best == nil || !finite(best.Pool.Ready) || p.Pool.Ready > best.Pool.Ready) {
			best = p
		}
		if math.IsNaN(p.Pool.FlowQueue) {
			heldOK = false
			if err := p.Pool.FlowQueueErr; err != nil { // on the page, not read (scrape's readFlowQueue says why)
				reason := "nan"
				if errors.Is(err, scrape.ErrWrongType) {
					reason = "bad_data"
				}
				badFlows = append(badFlows, ReadError{Signal: "held", Reason: reason, Err: fmt.Errorf("%s: %w", sourcekey.Redact(urls[i]), err)})
			}
		} else {
			held += max(p.Pool.FlowQueue, 0) // the router's gauge can dip below 0 after a flow's GC
		}
	}
	switch {
	case best == nil && unread == len(pages): // each page's error says why
	case best == nil:
		var read []string
		for i, p := range pages {
			if p != nil {
				read = append(read, sourcekey.Redact(urls[i]))
			}
		}
		r.Errors = append(r.Errors, ReadError{Signal: "current", Reason: "empty", Err: fmt.Errorf("%s: the page has no ready endpoints (llm_d_epp_ready_endpoints or inference_pool_ready_pods, a NaN read as none): is it the EPP's metrics port (9090 in llm-d-router's chart), of a router that writes its pool's metrics?", strings.Join(read, ", "))})
	default:
		ready := int(math.Round(best.Pool.Ready))
		r.Obs.Current, r.Obs.Reporting, r.CurrentKnown = ready, ready, true
		r.Obs.Running, r.Obs.Waiting, r.Obs.KV = best.Running, best.Waiting, best.KV
		r.Obs.Queued = best.Pool.Queued(ready)
		f := modelserver.EPPFamilies()
		for _, sig := range []struct {
			name string
			v    float64
			fam  modelserver.Twin
		}{{"running", r.Obs.Running, f.AvgRunning}, {"waiting", r.Obs.Waiting, f.AvgQueue}} {
			if math.IsNaN(sig.v) {
				r.Errors = append(r.Errors, ReadError{Signal: sig.name, Reason: "empty", Err: fmt.Errorf("%s: no pool average for %s (%s or %s, a NaN read as none) beside its %v ready endpoints: a router that renamed or dropped it, or an EPP from before it was written (the Gateway API Inference Extension's InferenceModel-era EPP, whose request families are inference_model_*, has no running average: scale it on waiting or kv, or upgrade it); infscale reads llm-d-router's names (docs/llm-d.md); check the page with infscale parse --server epp",
					sourcekey.Redact(best.Source), sig.name, sig.fam.Current, sig.fam.Deprecated, best.Pool.Ready)})
			}
		}
		if ready == 0 {
			eppNoEndpoint(t, &r)
		}
	}
	if q, w := s.quantileOf(t, recommend.SignalTTFT); w > 0 {
		r.Obs.TTFT, r.Obs.NoneFinished = s.quantile(histTTFT, keys, pages, q, w, now)
	}
	r.Obs.ITL, _ = s.quantile(histITL, keys, pages, demandITLQuantile, demandWindow, now)
	// An EPP page has no prefix-cache counters: PrefixHit unknown. A URL
	// answering another EPP process's page than at its previous scrape is a
	// Service in front of several EPP replicas: its rates are dropped
	// (scrape.OtherProcess) and what it holds is one replica's, said here.
	for _, o := range s.rates(&r.Obs, keys, pages) {
		r.Errors = append(r.Errors, o.readError(urls[o.i], pages[o.i].ProcessStart, "EPP replica",
			"each scrape reads one replica's page, so its counters give no rate or quantile and its flow-control queue is that replica's alone (the others' held requests unseen): list each EPP pod's own URL (port 9090 in llm-d-router's chart), or use inferencePoolRef (docs/llm-d.md)"))
	}
	if t.Zero != nil && t.Zero.FlowControl {
		switch {
		case heldOK && len(urls) > 0:
			r.Obs.Held = held
		case len(badFlows) > 0:
			r.Errors = append(r.Errors, badFlows...)
		case unread > 0: // the page's own error says why; the gate is not in question
			r.Errors = append(r.Errors, ReadError{Signal: "held", Reason: "empty", Err: fmt.Errorf("held unknown: %d of %d EPP pages not read (their errors above), each holds its own flow-control queue", unread, len(urls))})
		default:
			r.Errors = append(r.Errors, ReadError{Signal: "held", Reason: "empty", Err: errors.New("no flow-control queue on every EPP page (llm_d_epp_flow_control_queue_size or inference_extension_flow_control_queue_size): is the flowControl feature gate on?")})
		}
	}
	r.Duration = time.Since(start)
	return r
}

// eppAuthHint adds to err, an EPP page's read error, what a 401 or 403
// means there: llm-d-router's chart serves the EPP's /metrics behind
// authentication by default (the EPP checks a bearer token with a
// TokenReview and a SubjectAccessReview for get on /metrics). A scrape: URL
// list sends no token; a target with scrape.bearer_token_file had its
// token refused (401) or its service account not allowed (403). Other
// errors are returned as they are.
func eppAuthHint(t *config.Target, err error) error {
	var se *scrape.StatusError
	if !errors.As(err, &se) || se.Code != http.StatusUnauthorized && se.Code != http.StatusForbidden {
		return err
	}
	switch {
	case t.Scrape.Pods == nil || t.Scrape.Pods.BearerTokenFile == "":
		return fmt.Errorf("%w (llm-d-router's chart serves the EPP's /metrics behind authentication by default, and this target sends no token: give inferencePoolRef with scrape: {bearer_token_file: /var/run/secrets/kubernetes.io/serviceaccount/token}, turn the EPP's authentication off (router.monitoring.prometheus.auth.enabled: false), or read it through Prometheus; docs/llm-d.md)", err)
	case se.Code == http.StatusUnauthorized:
		return fmt.Errorf("%w (the EPP refused the token of scrape.bearer_token_file %s: its TokenReview failed, an expired or another cluster's token; docs/llm-d.md)", err, t.Scrape.Pods.BearerTokenFile)
	default:
		return fmt.Errorf("%w (the token of scrape.bearer_token_file %s is valid but its service account may not get /metrics: bind it a ClusterRole with nonResourceURLs: [/metrics], verbs: [get]; docs/llm-d.md)", err, t.Scrape.Pods.BearerTokenFile)
	}
}

// eppNoEndpoint makes the load of a pool whose EPP reports no ready
// endpoint unknown, with an error saying why, when the target does not
// scale to zero: such a pool is not at 0 replicas, its pods are starting,
// crashed or unreadable to the EPP, and no endpoint's load is known (the
// HPA does not scale without a ready pod's metrics either). Read as 0 (an
// idle pool) it was scaled down to minReplicaCount. A target with zero:
// reads it as an empty pool (current 0, nothing running; the held requests
// wake it).
func eppNoEndpoint(t *config.Target, r *Reading) {
	if t.Zero != nil {
		return
	}
	r.Obs.Running, r.Obs.Waiting, r.Obs.KV, r.Obs.Queued = math.NaN(), math.NaN(), math.NaN(), 0
	r.Errors = append(r.Errors, ReadError{Signal: "running", Reason: "empty", Err: errors.New("the EPP reports no ready endpoint (no model-server pod with fresh metrics: all starting or failing, or their /metrics unreadable to the EPP), and the target does not scale to zero (no zero: block): the pool's load is unknown, not 0, and the last desired is held")})
}

// eppPools refuses pages of an InferencePool other than the target's: an
// Endpoint Picker serves one pool (its gauges' name label), so pages of two
// pools are not replicas of one EPP, and with inferencePoolRef a page must
// be of that pool. Read together, one pool's ready count went with the
// other's rates and both pools' held requests were summed.
func eppPools(t *config.Target, urls []string, pages []*scrape.Page, errs []error) *ReadError {
	first, firstURL := "", ""
	for i, p := range pages {
		if errs[i] != nil || p == nil || p.Pool == nil || p.Pool.Name == "" {
			continue
		}
		name := p.Pool.Name
		switch {
		case t.InferencePoolRef != nil && name != t.InferencePoolRef.Name:
			return &ReadError{Signal: "epp", Reason: "not_in_pool", Err: fmt.Errorf("%s is the Endpoint Picker of InferencePool %q, not of %q (inferencePoolRef): the pool's endpointPickerRef names another pool's EPP Service", sourcekey.Redact(urls[i]), name, t.InferencePoolRef.Name)}
		case first == "":
			first, firstURL = name, urls[i]
		case name != first:
			return &ReadError{Signal: "page", Reason: "ambiguous", Err: fmt.Errorf("%s is the Endpoint Picker of InferencePool %q and %s of %q: an EPP serves one pool, and a target's scrape: URLs are its EPP replicas; give each pool its own target", sourcekey.Redact(urls[i]), name, sourcekey.Redact(firstURL), first)}
		}
	}
	return nil
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
