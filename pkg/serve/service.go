package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"os"
	"reflect"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/infscale/infscale/internal/crashlog"
	"github.com/infscale/infscale/internal/tcplisten"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/kube"
	"github.com/infscale/infscale/pkg/replay"
)

// ShutdownTimeout bounds each step of a stop: the running cycle's end and
// the HTTP server's graceful shutdown.
const ShutdownTimeout = 5 * time.Second

// Options configure Run.
type Options struct {
	// ConfigPath is re-read on each Reload signal.
	ConfigPath string
	// Listen overrides the config's listen address when not empty.
	Listen string
	// Listener, when set, is the HTTP address already bound (Listen), which
	// Run serves and closes, on every return. Nil: Run binds the address
	// itself, before it creates anything on disk (StateDir).
	Listener net.Listener
	// StateDir persists per-target state when not empty.
	StateDir string
	// ReplaySize, when set, sizes the in-process tuning runs' replays to
	// the process's memory (Tuning.Size) [none: tune.TargetOptions'
	// Workers at once, each at replay.MaxBacklog].
	ReplaySize func(w io.Writer, n, pools int, search bool, requests func() int64) replay.Sizing
	// Audit receives one JSON line per decision (nil: none).
	Audit io.Writer
	// Version is the build version for infscale_build_info.
	Version string
	// Log is the logger (nil: discard).
	Log *slog.Logger
	// Now is the decisions' clock (nil: time.Now).
	Now func() time.Time
	// Reload triggers a config reload (SIGHUP); a new config that does not
	// load is logged and the old one kept.
	Reload <-chan os.Signal
	// OnDecision is called with every decision.
	OnDecision func(Record)
	// OnListen is called with the bound address once the HTTP server
	// listens (tests and the demo use port 0).
	OnListen func(addr string)
	// Source overrides the source built from the config (tests).
	Source Source
	// NoRebuild disables rebuilding state from Prometheus at startup (by
	// default, in Prometheus mode, a target without --state-dir state is
	// rebuilt from infscale's own series).
	NoRebuild bool
	// Cluster returns the Kubernetes API client; it is called once, and
	// only when a target names a scaleTargetRef (Prometheus and embedded
	// mode without one never contact a cluster). Nil: kube.Connect("")
	// (in-cluster, else $KUBECONFIG or ~/.kube/config).
	Cluster func() (*kube.Cluster, error)
	// IsLeader gates every write of apply: true targets: spec.replicas is
	// written only while it returns true (the Lease holder of several
	// serve replicas). Nil: this instance always writes.
	IsLeader func() bool
	// LeaderUntil, when set, bounds every write (and gates it, in place
	// of IsLeader): the time up to which this instance may write
	// (kube.Elector.LeaderUntil), so no request of a write is sent after
	// the leadership ended. Nil: taken from Elector when it has one.
	LeaderUntil func() time.Time
	// Elector, when set, elects the writer among serve's replicas: Run
	// campaigns from the start and is stopped (the Lease released) only
	// after the loop, so no write follows the release; infscale_leader
	// follows its IsLeader, which every writer checks before each write.
	// Nil: this instance is the only one (infscale_leader 1).
	Elector Elector

	// load reads ConfigPath on a reload (tests; nil: config.Load).
	load func(string) (*config.File, error)
}

// sources builds a config's source: NewSource, wrapped in a KubeSource
// when a target names a scaleTargetRef; the Kubernetes client is made on
// first need and kept across reloads.
type sources struct {
	o       *Options
	cluster *kube.Cluster
}

func (ss *sources) build(cfg *config.File) (Source, error) {
	src, err := NewSource(cfg)
	if err != nil {
		return nil, err
	}
	return ss.wrap(cfg, src)
}

// wrap adds or removes the KubeSource layer as cfg needs it.
func (ss *sources) wrap(cfg *config.File, src Source) (Source, error) {
	ks, isKube := src.(*KubeSource)
	switch {
	case cfg.Kube() && !isKube:
		if ss.cluster == nil {
			connect := ss.o.Cluster
			if connect == nil {
				connect = func() (*kube.Cluster, error) { return kube.Connect("") }
			}
			c, err := connect()
			if err != nil {
				return nil, fmt.Errorf("a target names a scaleTargetRef: %w", err)
			}
			ss.cluster = c
		}
		ks := NewKubeSource(src, ss.cluster, ss.o.IsLeader)
		ks.Applier.LeaderUntil = ss.o.LeaderUntil
		return ks, nil
	case !cfg.Kube() && isKube:
		return ks.Inner, nil
	}
	return src, nil
}

// close stops the informers.
func (ss *sources) close() {
	if ss.cluster != nil {
		ss.cluster.Close()
	}
}

// writerOf is src as a Writer when it writes.
func writerOf(src Source) Writer {
	if w, ok := src.(Writer); ok {
		return w
	}
	return nil
}

// prometheusOf is the PrometheusSource inside src, if any.
func prometheusOf(src Source) (*PrometheusSource, bool) {
	if ks, ok := src.(*KubeSource); ok {
		src = ks.Inner
	}
	ps, ok := src.(*PrometheusSource)
	return ps, ok
}

// Run serves cfg until ctx is done: the decision loop, and the HTTP server
// on the listen address. It returns nil after a graceful shutdown (the HTTP
// server is shut down on a fresh timeout context, not the cancelled one).
func Run(ctx context.Context, cfg *config.File, o Options) error {
	log := o.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	// Bound before anything is created on disk (StateDir): a port in use
	// leaves no state directory behind. Closed on every return (Serve
	// closes it once it runs).
	ln := o.Listener
	if ln == nil {
		var err error
		if ln, err = Listen(cfg, o.Listen); err != nil {
			return err
		}
	}
	defer ln.Close()
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m := NewMetrics(reg, o.Version)
	if o.Elector != nil && o.IsLeader == nil {
		o.IsLeader = o.Elector.IsLeader
	}
	if u, ok := o.Elector.(interface{ LeaderUntil() time.Time }); ok && o.LeaderUntil == nil {
		o.LeaderUntil = u.LeaderUntil
	}
	ss := &sources{o: &o}
	defer ss.close()
	src := o.Source
	var err error
	if src == nil {
		src, err = ss.build(cfg)
	} else {
		src, err = ss.wrap(cfg, src)
	}
	if err != nil {
		return err
	}
	lo := LoopOptions{Source: src, Metrics: m, Interval: cfg.IntervalDuration(), Now: o.Now, Log: log, Audit: o.Audit, OnDecision: o.OnDecision}
	if o.StateDir != "" {
		st, err := NewStore(o.StateDir)
		if err != nil {
			return err
		}
		lo.Store = st
		if len(st.removedTemps) > 0 {
			log.Info("stale temporary files removed from the state dir: writes a stop without shutdown (kill -9, OOM) cut short", "dir", st.Dir, "files", st.removedTemps)
		}
	}
	if ps, ok := prometheusOf(src); ok && !o.NoRebuild {
		rb := &Rebuilder{API: ps.Evaluator.API, Step: cfg.IntervalDuration(), Timeout: time.Duration(cfg.Prometheus.Timeout), SeriesLabels: cfg.Prometheus.SeriesLabels}
		lo.Rebuild = rb.Rebuild
	}
	loop, err := NewLoop(lo)
	if err != nil {
		return err
	}
	tn := newTuning(reg, src, cfg, o, log)
	loop.SetTuning(tn)
	// The HTTP server starts first: /healthz answers at once while the
	// targets' state is restored (a rebuild from a hanging Prometheus takes
	// up to its timeout); /readyz stays 503 until a cycle decides on data.
	addr := cfg.Listen
	if o.Listen != "" {
		addr = o.Listen
	}
	// A handler's panic, recovered by net/http, is one ERROR record.
	srv := &http.Server{Handler: Handler(reg, loop), ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelError), ReadHeaderTimeout: 10 * time.Second, ReadTimeout: serverReadTimeout, IdleTimeout: serverIdleTimeout}
	srvErr := make(chan error, 1)
	go func() { srvErr <- srv.Serve(ln) }()
	log.Info("serving", "addr", ln.Addr().String(), "targets", len(cfg.Targets), "source", src.Name(), "interval", cfg.IntervalDuration().String()) // "15s" in JSON too, not nanoseconds
	if o.OnListen != nil {
		o.OnListen(ln.Addr().String())
	}
	// Under serve's own context: a stop during the startup rebuild ends its
	// queries at once, not after prometheus.timeout.
	if err := loop.SetConfig(ctx, cfg); err != nil {
		srv.Close()
		return err
	}
	if ctx.Err() != nil { // stopped while the state was restored
		srv.Close()
		log.Info("stopped", "during", "state restore")
		return nil
	}

	loopCtx, stopLoop := context.WithCancel(ctx)
	loopDone := make(chan struct{})
	run := func(l *Loop) {
		go func() {
			defer close(loopDone)
			defer crashlog.Handle(log) // a panic in a cycle ends serve: one record (docs/serve.md)
			_ = l.Run(loopCtx)
		}()
	}
	run(loop)
	go func() {
		defer crashlog.Handle(log)
		tn.Run(loopCtx) // tuning in the background, never in a cycle
	}()
	stopElector := startElector(o.Elector, m, log)
	defer stopElector()
	current := cfg
	sourceStale := false // a reload's source not built: rebuilt at the next (applyReload)
	// A reload runs beside this loop (reloading is its result, nil when
	// none runs): its new targets' restores may wait up to
	// prometheus.timeout, and a stop must not wait for them. A SIGHUP
	// during a reload is queued, and any more coalesce with it: one reload
	// runs once the current one has finished, reading the file then (the
	// newest config wins).
	var reloading chan reloaded
	queued := 0
	load := o.load
	if load == nil {
		load = config.Load
	}
	if o.Elector != nil { // a reload is refused as the start is (cmd/recommender's serve)
		inner := load
		load = func(path string) (*config.File, error) {
			f, err := inner(path)
			if err == nil {
				err = CheckReplicated(f)
			}
			if err != nil {
				return nil, err
			}
			return f, nil
		}
	}
	startReload := func() {
		done := make(chan reloaded, 1)
		reloading = done
		go func() {
			next, err := reload(ctx, loop, load, o.ConfigPath)
			done <- reloaded{next, err}
		}()
	}
	for {
		select {
		case <-ctx.Done():
			stopLoop()
			// Every read takes the cycle's context; should one not return,
			// the stop still ends within ShutdownTimeout. A reload's
			// restores end with ctx too.
			tctx, tcancel := context.WithTimeout(context.Background(), ShutdownTimeout)
			defer tcancel()
			timeout := tctx.Done() // stays closed once the time is up: both waits below share it
			select {
			case <-loopDone:
			case <-timeout:
				log.Warn("the running cycle did not end within the shutdown timeout; stopping without it", "timeout", ShutdownTimeout)
			}
			if reloading != nil {
				select {
				case <-reloading:
				case <-timeout:
					log.Warn("the running config reload did not end within the shutdown timeout; stopping without it", "timeout", ShutdownTimeout)
				}
			}
			stopElector()
			sctx, cancel := context.WithTimeout(context.Background(), ShutdownTimeout)
			defer cancel()
			if err := srv.Shutdown(sctx); err != nil {
				return fmt.Errorf("http shutdown: %w", err)
			}
			log.Info("stopped")
			return nil
		case err := <-srvErr:
			stopLoop()
			<-loopDone
			if errors.Is(err, http.ErrServerClosed) {
				return nil
			}
			return fmt.Errorf("http server: %w", err)
		case <-o.Reload:
			if reloading == nil {
				startReload()
				continue
			}
			queued++
			if queued == 1 {
				log.Info("config reload requested while the previous reload still runs (loading the file, restoring new targets' state): queued; it runs once that one finishes and reads the file then (the newest config wins)", "path", o.ConfigPath)
			} else {
				log.Info("config reload requested again during a reload: coalesced with the queued one", "path", o.ConfigPath, "requests", queued)
			}
		case r := <-reloading:
			reloading = nil
			current = applyReload(r, current, reloadEnv{o: &o, m: m, log: log, loop: loop, ss: ss, addr: addr, sourceStale: &sourceStale})
			if queued > 0 && ctx.Err() == nil {
				log.Info("running the config reload requested during the previous one", "path", o.ConfigPath, "requests", queued)
				queued = 0
				startReload()
			}
		}
	}
}

// reloaded is a reload's outcome: the new config, or why it was not
// applied.
type reloaded struct {
	next *config.File
	err  error
}

// reloadEnv is what applyReload changes and logs to.
type reloadEnv struct {
	o    *Options
	m    *Metrics
	log  *slog.Logger
	loop *Loop
	ss   *sources
	addr string
	// sourceStale: the running source is not the one current asks for
	// (a reload's source failed to build); the next reload builds it.
	sourceStale *bool
}

// LogConfigWarnings logs f's deprecated keys and warnings as WARN records,
// msg "deprecated configuration key" or "configuration warning" with the
// problem (FILE:LINE:COL: ...) in at: at a reload, and at serve's start
// with --log-format json, so that one query finds both.
func LogConfigWarnings(log *slog.Logger, f *config.File) {
	for _, d := range f.Deprecations {
		log.Warn("deprecated configuration key", "at", d.Error())
	}
	for _, w := range f.Warnings {
		log.Warn("configuration warning", "at", w.Error())
	}
}

// applyReload counts and logs a finished reload and applies what its
// SetConfig did not (source, interval); it returns the running config:
// r.next, or current when the reload failed. A source that cannot be
// built (no Kubernetes client for a new scaleTargetRef, a prometheus:
// client refused) leaves the reload applied in part: counted as a
// failure, and built again at the next reload, the file unchanged or not.
func applyReload(r reloaded, current *config.File, e reloadEnv) *config.File {
	o, log, loop := e.o, e.log, e.loop
	next, err := r.next, r.err
	if err != nil {
		e.m.Reloaded(false)
		log.Error("config reload failed; keeping the running config", "path", o.ConfigPath, "err", err)
		return current
	}
	stale := e.sourceStale != nil && *e.sourceStale
	applied := true
	LogConfigWarnings(log, next)
	if o.Source == nil && (stale || !reflect.DeepEqual(next.Prometheus, current.Prometheus)) {
		if s, err := e.ss.build(next); err != nil {
			applied = false
			log.Error("new prometheus block not applied; the targets are, the source runs as before: fix it and reload", "err", err)
		} else {
			loop.SetSource(s)
		}
	} else if stale || next.Kube() != current.Kube() {
		if s, err := e.ss.wrap(next, loop.source); err != nil {
			applied = false
			log.Error("scaleTargetRef not applied: no Kubernetes client; the targets are, nothing is applied to the cluster: fix it and reload", "err", err)
		} else {
			loop.SetSource(s)
		}
	}
	if e.sourceStale != nil {
		*e.sourceStale = !applied
	}
	e.m.Reloaded(applied)
	if next.Listen != current.Listen && o.Listen == "" {
		log.Warn("listen address changes need a restart", "running", e.addr, "configured", next.Listen)
	}
	if !maps.Equal(next.Prometheus.SeriesLabels, current.Prometheus.SeriesLabels) {
		log.Warn("prometheus.series_labels changes need a restart: the rebuild of a new target's state and the tuned policy's revert lookup read serve's own series with the labels it started with", "running", current.Prometheus.SeriesLabels, "configured", next.Prometheus.SeriesLabels)
	}
	loop.SetInterval(next.IntervalDuration())
	if applied {
		log.Info("config reloaded", "path", o.ConfigPath, "targets", len(next.Targets))
	}
	return next
}

// reload loads the configuration at path with load and applies it to
// loop. A reload that fails for any reason, a panic in the decoder or in
// building the policies included, returns the error and leaves the running
// configuration in place: a bad file never stops a running serve.
func reload(ctx context.Context, loop *Loop, load func(string) (*config.File, error), path string) (next *config.File, err error) {
	defer func() {
		if r := recover(); r != nil {
			next, err = nil, fmt.Errorf("panic while loading %s: %v", path, r)
		}
	}()
	if next, err = load(path); err != nil {
		return nil, err
	}
	if err := loop.SetConfig(ctx, next); err != nil {
		return nil, err
	}
	return next, nil
}

// Listen binds serve's HTTP address (TCP): flag, the --listen value, when
// not empty, else cfg.Listen. Its error names where the address came from
// and, for a port in use, what to do.
func Listen(cfg *config.File, flag string) (net.Listener, error) {
	addr, from := cfg.Listen, "listen "+cfg.Listen+" (the config's listen:)"
	if flag != "" {
		addr, from = flag, "--listen "+flag
	}
	return tcplisten.Listen(addr, from, "--listen")
}

// NewSource builds the source a config asks for: Prometheus when
// prometheus.url is set, else scraping (embedded mode).
func NewSource(cfg *config.File) (Source, error) {
	if cfg.Prometheus.Embedded() {
		return NewScrapeSource(time.Duration(cfg.Prometheus.Timeout)), nil
	}
	return NewPrometheusSource(cfg.Prometheus)
}

// serverIdleTimeout closes a keep-alive connection with no request on it,
// serverReadTimeout one whose request (headers and body) has not arrived
// whole: serve's endpoints take no body. Without them a client that kept
// its connection open after a request, or sent a Content-Length and no
// body, held a descriptor and a goroutine for as long as it stayed
// connected. The idle timeout is above the longest usual scrape interval
// (1 min), so a scraper's connection is reused.
var (
	serverIdleTimeout = 2 * time.Minute
	serverReadTimeout = 30 * time.Second
)
