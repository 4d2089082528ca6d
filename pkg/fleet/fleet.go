package fleet

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/infscale/infscale/pkg/replica"
)

// Config describes a fleet. Zero fields take the defaults noted.
type Config struct {
	// Replicas is how many replicas serve at start (default 1), ready at once.
	Replicas int
	// Max is how many replicas the fleet can run (default 8): one loopback
	// port is bound per slot at Start.
	Max int
	// Replica is the replica model (default replica.DefaultConfig(): 8B
	// FP16 on an H100, docs/design.md's reference).
	Replica *replica.Replica
	// ColdStart is how long a new replica takes to serve (default: the
	// replica model's cold start, 91 s for the reference; demos and tests
	// shorten it).
	ColdStart time.Duration
	// PromptTokens and OutputTokens are every request's lengths (defaults
	// 512 and 256).
	PromptTokens, OutputTokens int
	// Rate is the arrival rate in requests per second as a function of the
	// time since Start (default: SetRate's constant, initially 0).
	Rate func(elapsed time.Duration) float64
	// Tick is the simulation step (default 50 ms of wall time).
	Tick time.Duration
	// Model is the model_name label and the OpenAI API's model id
	// (default "meta-llama/Meta-Llama-3-8B").
	Model string
	// Listen is the address of the fleet's Service: the OpenAI API
	// balanced over the ready replicas (default "127.0.0.1:0", a free
	// loopback port; see URL).
	Listen string
	// Control is the address of the fault-drill API (bursts, /metrics
	// failures, clients going away, the state; control.go), "" for none.
	// "127.0.0.1:0" takes a free loopback port; see ControlURL.
	Control string
	// Listener and ControlListener, when set, are the Service's and the
	// fault-drill API's listeners, bound by the caller (to word its own
	// errors, e.g. a port in use under its flag's name) instead of Listen
	// and Control. Start owns them: Stop closes them, and so does a
	// failed Start.
	Listener, ControlListener net.Listener
}

// Fleet is a running simulated fleet. Its methods are safe for concurrent use.
type Fleet struct {
	cfg   Config
	slots []*slot
	start time.Time

	mu       sync.Mutex
	rate     float64
	arrivals float64 // fractional arrivals carried between ticks
	pending  []*request
	desired  int
	failing  bool
	stop     context.CancelFunc
	done     chan struct{}
	servers  []*http.Server
	served   float64
	url      string
	control  string // the control API's base URL, "" without one
}

// slot is one replica position: a port that serves the replica's /metrics
// while it runs, and 503 while it does not (a pod that is not there).
type slot struct {
	url      string
	engine   *engine
	expo     *exposition
	on       bool      // started (cold-starting or ready)
	readyAt  time.Time // serves from then on
	draining bool      // removed: finishes its requests, takes no new ones
	wake     chan struct{}
}

// kick wakes the slot's engine loop (a request arrived).
func (s *slot) kick() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// serving reports whether the slot takes new requests at now.
func (s *slot) serving(now time.Time) bool { return s.on && !s.draining && !now.Before(s.readyAt) }

// Start binds Max loopback ports, starts Replicas replicas and the
// simulation, and returns the running fleet. Stop it with Stop (or cancel ctx).
func Start(ctx context.Context, cfg Config) (_ *Fleet, err error) {
	defer func() {
		if err != nil { // the caller's listeners are Start's (closing one twice is harmless)
			for _, ln := range []net.Listener{cfg.Listener, cfg.ControlListener} {
				if ln != nil {
					ln.Close()
				}
			}
		}
	}()
	if cfg.Replicas <= 0 {
		cfg.Replicas = 1
	}
	if cfg.Max <= 0 {
		cfg.Max = 8
	}
	if cfg.Replicas > cfg.Max {
		return nil, fmt.Errorf("fleet: %d replicas above max %d", cfg.Replicas, cfg.Max)
	}
	if cfg.Replica == nil {
		r, err := replica.New(replica.DefaultConfig())
		if err != nil {
			return nil, err
		}
		cfg.Replica = r
	}
	if cfg.ColdStart == 0 {
		cfg.ColdStart = time.Duration(cfg.Replica.ColdStart() * float64(time.Second))
	}
	if cfg.PromptTokens <= 0 {
		cfg.PromptTokens = 512
	}
	if cfg.OutputTokens <= 0 {
		cfg.OutputTokens = 256
	}
	if cfg.Tick <= 0 {
		cfg.Tick = 50 * time.Millisecond
	}
	if cfg.Model == "" {
		cfg.Model = "meta-llama/Meta-Llama-3-8B"
	}
	if cfg.Listen == "" {
		cfg.Listen = "127.0.0.1:0"
	}
	ctx, cancel := context.WithCancel(ctx)
	f := &Fleet{cfg: cfg, start: time.Now(), desired: cfg.Replicas, stop: cancel, done: make(chan struct{})}
	front, ctl := cfg.Listener, cfg.ControlListener
	if front == nil {
		if front, err = net.Listen("tcp", cfg.Listen); err != nil {
			cancel()
			return nil, fmt.Errorf("fleet: %w", err)
		}
	}
	f.url = "http://" + front.Addr().String()
	if ctl == nil && cfg.Control != "" {
		if ctl, err = net.Listen("tcp", cfg.Control); err != nil {
			cancel()
			front.Close()
			return nil, fmt.Errorf("fleet: control API: %w", err)
		}
	}
	if ctl != nil {
		f.control = "http://" + ctl.Addr().String()
	}
	for i := range cfg.Max {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			cancel()
			f.closeServers()
			front.Close()
			if ctl != nil {
				ctl.Close()
			}
			return nil, fmt.Errorf("fleet: listen: %w", err)
		}
		s := &slot{url: "http://" + ln.Addr().String() + "/metrics", wake: make(chan struct{}, 1)}
		s.engine = newEngine(cfg.Replica)
		s.expo = newExposition(cfg.Model, "0", float64(cfg.Replica.KVCapacityTokens()))
		s.on = i < cfg.Replicas
		s.readyAt = f.start
		f.slots = append(f.slots, s)
		srv := &http.Server{Handler: f.handler(s), ReadHeaderTimeout: 5 * time.Second}
		f.servers = append(f.servers, srv)
		go srv.Serve(ln)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { f.api(w, r, f.leastLoaded) }), ReadHeaderTimeout: 5 * time.Second}
	f.servers = append(f.servers, srv)
	go srv.Serve(front)
	if ctl != nil {
		srv := &http.Server{Handler: f.controlHandler(), ReadHeaderTimeout: 5 * time.Second}
		f.servers = append(f.servers, srv)
		go srv.Serve(ctl)
	}
	var wg sync.WaitGroup
	for _, s := range f.slots {
		wg.Add(1)
		go func() { defer wg.Done(); f.drive(ctx, s) }()
	}
	go func() { f.run(ctx); wg.Wait(); close(f.done) }()
	return f, nil
}

// URL is the base URL of the fleet's Service (the OpenAI API over the
// ready replicas, e.g. http://127.0.0.1:8000; POST URL+"/v1/completions").
// With no replica ready it answers 503.
func (f *Fleet) URL() string { return f.url }

// ControlURL is the base URL of the fault-drill API (Config.Control), e.g.
// http://127.0.0.1:8001 (POST URL+"/fleet/burst?n=100"); "" without one.
func (f *Fleet) ControlURL() string { return f.control }

// leastLoaded is the ready replica with the fewest requests (a load
// balancer's least-requests policy), nil when none is ready. Under f.mu.
func (f *Fleet) leastLoaded(now time.Time) *slot {
	var best *slot
	for _, s := range f.slots {
		if s.serving(now) && (best == nil || s.engine.load() < best.engine.load()) {
			best = s
		}
	}
	return best
}

// drive runs one replica's engine in wall time: a phase starts when the
// previous one ends (back to back while there is work) or when a request
// arrives at an idle engine, and its tokens are released when it ends.
func (f *Fleet) drive(ctx context.Context, s *slot) {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		f.mu.Lock()
		now := time.Now()
		e := s.engine
		running := s.on && !now.Before(s.readyAt)
		if e.busy && !now.Before(e.end) {
			end := e.end
			e.finish()
			if running {
				e.begin(end)
			}
		}
		var next time.Time
		if !e.busy && running {
			// An idle engine starts when the head of the queue reached the
			// scheduler (not when this loop woke): wake-up latency stays
			// out of the simulated timeline.
			at := now
			if t, waiting := e.eligibleAt(); waiting && t.Before(now) && t.After(e.end) {
				at = t
			}
			if _, ok := e.begin(at); !ok {
				if at, waiting := e.eligibleAt(); waiting && at.After(now) {
					next = at
				}
			}
		}
		if e.busy {
			next = e.end
		}
		f.mu.Unlock()
		wait := time.Hour
		if !next.IsZero() {
			wait = max(time.Until(next), 0)
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return
		case <-s.wake:
		case <-timer.C:
		}
	}
}

func (f *Fleet) handler(s *slot) http.Handler {
	metrics := promhttp.HandlerFor(s.expo.reg, promhttp.HandlerOpts{})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		serving := s.on && !time.Now().Before(s.readyAt) // draining pods still answer
		failing := f.failing
		f.mu.Unlock()
		switch {
		case r.URL.Path != "/metrics":
			f.api(w, r, func(now time.Time) *slot {
				if s.serving(now) {
					return s
				}
				return nil
			})
		case failing:
			http.Error(w, "injected failure", http.StatusInternalServerError)
		case !serving:
			http.Error(w, "replica not running", http.StatusServiceUnavailable)
		default:
			metrics.ServeHTTP(w, r)
		}
	})
}

// run advances the simulation every Tick until ctx is done.
func (f *Fleet) run(ctx context.Context) {
	tick := time.NewTicker(f.cfg.Tick)
	defer tick.Stop()
	last := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			now = time.Now()
			f.step(now.Sub(last), now)
			last = now
		}
	}
}

// step advances every ready replica by dt and dispatches the arrivals.
func (f *Fleet) step(dt time.Duration, now time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	rate := f.rate
	if f.cfg.Rate != nil {
		rate = f.cfg.Rate(now.Sub(f.start))
	}
	f.arrivals += rate * dt.Seconds()
	// Arrivals are stamped at the tick's start: the engines then serve the
	// tick's interval [now-dt, now] from that instant.
	for ; f.arrivals >= 1; f.arrivals-- {
		f.pending = append(f.pending, &request{arrived: now.Add(-dt), prompt: f.cfg.PromptTokens, output: f.cfg.OutputTokens, remaining: f.cfg.OutputTokens})
	}
	f.dispatch(now)
	for _, s := range f.slots {
		if s.draining && len(s.engine.running)+len(s.engine.waiting) == 0 {
			s.on, s.draining = false, false
		}
		f.served += s.engine.finished
		s.expo.update(s.engine)
	}
}

// Served is the number of requests finished since Start.
func (f *Fleet) Served() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return int(f.served)
}

// dispatch sends pending requests to the ready replica with the fewest
// requests (a load balancer's least-requests policy); with none ready they
// stay pending (held in front of the servers).
func (f *Fleet) dispatch(now time.Time) {
	for len(f.pending) > 0 {
		best := f.leastLoaded(now)
		if best == nil {
			return
		}
		best.engine.waiting = append(best.engine.waiting, f.pending[0])
		f.pending = f.pending[1:]
		best.kick()
	}
}

// SetRate sets a constant arrival rate in requests per second (used when
// Config.Rate is nil).
func (f *Fleet) SetRate(perSecond float64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.rate = max(perSecond, 0)
}

// SetDesired scales the fleet to n replicas (clamped to 0..Max) as KEDA
// would: new replicas serve after ColdStart; when scaling down, replicas
// still starting go first (at once), then ready ones, which stop taking
// requests and finish those they hold (a pod's graceful termination). A
// slot still draining cannot restart until it is empty.
func (f *Fleet) SetDesired(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n = min(max(n, 0), len(f.slots))
	f.desired = n
	now := time.Now()
	active := 0
	for _, s := range f.slots {
		if s.on && !s.draining {
			active++
		}
	}
	for _, s := range f.slots {
		if active >= n {
			break
		}
		if !s.on {
			s.on, s.readyAt = true, now.Add(f.cfg.ColdStart)
			active++
		}
	}
	// Remove: the latest started first (cold-starting ones before ready ones).
	for active > n {
		var victim *slot
		for _, s := range f.slots {
			if s.on && !s.draining && (victim == nil || !s.readyAt.Before(victim.readyAt)) {
				victim = s
			}
		}
		if now.Before(victim.readyAt) {
			victim.on = false
		} else {
			victim.draining = true
			// Waiting requests go back to the balancer; running ones finish.
			f.pending = append(f.pending, victim.engine.waiting...)
			victim.engine.waiting = nil
		}
		active--
	}
	f.dispatch(now)
}

// Desired is the replica count the fleet was last asked for.
func (f *Fleet) Desired() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.desired
}

// Ready is the number of replicas serving now; Starting those in cold start.
func (f *Fleet) Ready() (ready, starting int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.readyLocked(time.Now())
}

// readyLocked is Ready at now, under f.mu.
func (f *Fleet) readyLocked(now time.Time) (ready, starting int) {
	for _, s := range f.slots {
		switch {
		case !s.on || s.draining:
		case now.Before(s.readyAt):
			starting++
		default:
			ready++
		}
	}
	return ready, starting
}

// Load returns the requests running and waiting over all replicas, and
// those pending in front of them.
func (f *Fleet) Load() (running, waiting, pending int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.loadLocked()
}

// loadLocked is Load under f.mu.
func (f *Fleet) loadLocked() (running, waiting, pending int) {
	for _, s := range f.slots {
		running += len(s.engine.running)
		waiting += len(s.engine.waiting)
	}
	return running, waiting, len(f.pending)
}

// URLs returns every slot's /metrics URL (static: serve's scrape: list).
func (f *Fleet) URLs() []string {
	out := make([]string, len(f.slots))
	for i, s := range f.slots {
		out[i] = s.url
	}
	return out
}

// ReadyURLs returns the /metrics URLs of the replicas serving now (what a
// service discovery would list).
func (f *Fleet) ReadyURLs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	var out []string
	for _, s := range f.slots {
		if s.serving(now) {
			out = append(out, s.url)
		}
	}
	return out
}

// SetFailing makes every /metrics answer 500 (a scrape failure, as a
// drill) or recover; POST /fleet/scrape-failure on the control API.
func (f *Fleet) SetFailing(failing bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failing = failing
}

// Stop stops the simulation and the HTTP servers.
func (f *Fleet) Stop() {
	f.stop()
	<-f.done
	f.closeServers()
}

// closeServers shuts the servers down, each given a second for its
// answers in progress; then the connections still open are closed: a
// stream's handler waits for tokens the stopped engines no longer make.
func (f *Fleet) closeServers() {
	for _, s := range f.servers {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		if err := s.Shutdown(ctx); err != nil {
			_ = s.Close()
		}
		cancel()
	}
}

// Inject adds n requests at once (a burst), dispatched to the ready
// replicas (pending while none is); POST /fleet/burst on the control API.
func (f *Fleet) Inject(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	now := time.Now()
	for range n {
		f.pending = append(f.pending, &request{arrived: now, prompt: f.cfg.PromptTokens, output: f.cfg.OutputTokens, remaining: f.cfg.OutputTokens})
	}
	f.dispatch(now)
}

// Cancel drops every request, running, waiting and pending (the clients
// went away); POST /fleet/cancel on the control API.
func (f *Fleet) Cancel() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, r := range f.pending {
		r.client.finish()
	}
	f.pending = nil
	for _, s := range f.slots {
		s.engine.reset()
	}
}
