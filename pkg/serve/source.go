package serve

import (
	"context"
	"time"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/recommend"
)

// Source reads the signals of every target at one instant: from Prometheus
// (PrometheusSource, one batched query per signal) or by scraping the
// replicas' /metrics pages (ScrapeSource, embedded mode).
type Source interface {
	// Name is the source's label value in infscale_query_duration_seconds:
	// "prometheus" or "scrape".
	Name() string
	// Read returns one Reading per target, in order. It never fails as a
	// whole: what could not be read is NaN in the Observation with a
	// ReadError saying why, so one broken target does not stop the others.
	Read(ctx context.Context, targets []*config.Target, now time.Time) []Reading
}

// Reading is what a Source saw of one target.
type Reading struct {
	// Obs holds the signals; every unknown float is NaN (never 0).
	Obs recommend.Observation
	// CurrentKnown is false when the current replica count could not be
	// read (Obs.Current is then 0 and meaningless).
	CurrentKnown bool
	// Errors are the failed or empty reads, by signal.
	Errors []ReadError
	// Warnings are Prometheus's warnings on this target's queries (each
	// once; a batched query's go to every target in it): the values came
	// with them and were read, e.g. a Thanos partial response. In embedded
	// mode, each page that answered with no running, waiting or KV sample
	// (a missing replica) is one.
	Warnings []string
	// Duration is the time spent reading this target (for a batched source,
	// the whole batch's time).
	Duration time.Duration
	// Stuck is the number of replicas read as stuck engines (requests wait
	// and are never run: case C18 of docs/design.md), when StuckKnown. They are left
	// out of Obs's totals (Prometheus mode: their waiting) and Reporting but
	// counted in Obs.Current, so the HPA's missing-pods rule applies to them
	// (docs/serve.md, "Stuck engines").
	Stuck      int
	StuckKnown bool
	// StuckReplicas names them where the source knows them (scrape URLs).
	StuckReplicas []string
	// Duplicated is how many series the source folded as copies of a
	// pod's own (two scrape jobs on one pod, an HA pair; Prometheus mode);
	// 0 when none or unknown.
	Duplicated int
	// Outstanding is each replica's running + waiting as read this cycle
	// (a stuck engine's is 0: deleting it loses nothing that would run),
	// for targets with pod_deletion_cost in embedded mode: by scrape URL
	// from ScrapeSource, by pod name from KubeSource. Nil otherwise.
	Outstanding map[string]float64
	// Diagnosis says why the target's selector finds none of its server's
	// series (promql.Diagnose), when a read came back empty and the
	// source could tell; "" otherwise. Each is given once.
	Diagnosis string
}

// ReadError is one signal that could not be read.
type ReadError struct {
	// Signal names what was read: running, waiting, kv, ttft, cpu, held,
	// current, reporting, or a scrape URL's "page".
	Signal string
	// Reason is the label value of infscale_query_errors_total: timeout,
	// unavailable, bad_data, bad_response, empty, nan, ...
	Reason string
	// Err is the underlying error.
	Err error
	// Reused is true when the error is an earlier read's, reused this
	// cycle without asking again (promql.ReusedError: the stuck count
	// between its reads): it is in the decision record, but was counted
	// and logged when it was read.
	Reused bool
}

// unknownObservation has every signal unknown.
func unknownObservation() recommend.Observation { return recommend.Unknown() }
