package config

import (
	"errors"
	"fmt"
	"math"
	"net"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml/token"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/robfig/cron/v3"
	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/infscale/infscale/pkg/profile"
	"github.com/infscale/infscale/pkg/promql"
)

// Signals are the metric types a target can scale on.
var Signals = []string{"queue", "waiting", "running", "kv", "cpu", "ttft"}

var nameRE = regexp.MustCompile(`^[a-zA-Z0-9_.-]+$`)

// cronNeverRef is where a cron's next firing is searched from to find one
// that never fires (as pkg/recommend's schedule compiler does).
var cronNeverRef = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// cronParser is the standard 5-field cron (minute hour dom month dow).
var cronParser = cron.NewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// validator checks values after decoding; every check runs (no early return)
// and reports at the position the decoder recorded for the key.
type validator struct {
	d   *strictDecoder
	cfg *File
	// failed are the keys the decoder already reported.
	failed map[string]bool
	// decodeErrs counts the decoder's problems per target ("targets[3]").
	decodeErrs map[string]int
}

// bad reports whether key or one of its parents failed to decode.
func (v *validator) bad(key string) bool {
	for k := key; k != ""; {
		if v.failed[k] {
			return true
		}
		i := strings.LastIndexAny(k, ".[")
		if i <= 0 {
			return false
		}
		k = k[:i]
	}
	return false
}

// at reports a problem at key (or, when key was absent, at its nearest
// present parent).
func (v *validator) at(key, format string, args ...any) {
	if v.bad(key) {
		return
	}
	v.d.errorf(v.posOf(key), key, format, args...)
}

func (v *validator) posOf(key string) *token.Position {
	for k := key; ; {
		if p, ok := v.d.pos[k]; ok && p != nil {
			return p
		}
		i := strings.LastIndexAny(k, ".[")
		if i <= 0 {
			return nil
		}
		k = k[:i]
	}
}

func (v *validator) present(key string) bool { _, ok := v.d.pos[key]; return ok }

func (v *validator) validate() {
	c := v.cfg
	if v.failed[""] {
		return // the document is not a mapping: nothing below it was read
	}
	if c.Interval < 0 || time.Duration(c.Interval) < time.Second {
		v.at("interval", "must be at least 1s, got %s", c.Interval)
	}
	if _, port, err := net.SplitHostPort(c.Listen); err != nil {
		v.at("listen", "must be host:port (e.g. 0.0.0.0:9105): %v", err)
	} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		// 99999 or "" failed only at startup (exit 1 after --check-config
		// said valid); 0 (a free port) is for tests and the demo.
		v.at("listen", "port %q: allowed a port number 0..65535 (0: any free port), e.g. 0.0.0.0:9105", port)
	}
	v.prometheus()
	if len(c.Targets) == 0 {
		v.at("targets", "at least one target is required")
	}
	// The decoder's problems per target, counted once (a per-target scan of
	// every problem was quadratic: 14 s for 20,000 bad targets).
	v.decodeErrs = map[string]int{}
	for _, e := range v.d.errs {
		if strings.HasPrefix(e.Key, "targets[") {
			if i := strings.IndexByte(e.Key, ']'); i > 0 {
				v.decodeErrs[e.Key[:i+1]]++
			}
		}
	}
	names := map[string]int{}
	for i := range c.Targets {
		p := fmt.Sprintf("targets[%d]", i)
		t := &c.Targets[i]
		if prev, dup := names[t.Name]; dup && t.Name != "" {
			v.at(p+".name", "duplicate target name %q (also targets[%d])", t.Name, prev)
		}
		names[t.Name] = i
		v.target(p, t)
	}
}

func (v *validator) prometheus() {
	pc := &v.cfg.Prometheus
	if pc.URL != "" {
		u, err := url.Parse(pc.URL)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			v.at("prometheus.url", "must be an http:// or https:// URL with a host, got %q", pc.URL)
		case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
			v.at("prometheus.url", "%q: no query, fragment or user:password (auth goes in basic_auth / authorization); the base URL, e.g. http://prometheus:9090", u.Redacted())
		case strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), "/api/v1"):
			v.at("prometheus.url", "%q: the base URL without /api/v1 (the client adds /api/v1/query), e.g. http://prometheus:9090", pc.URL)
		}
	}
	if pc.Timeout <= 0 {
		v.at("prometheus.timeout", "must be positive, got %s", pc.Timeout)
	}
	if err := pc.HTTPClientConfig.Validate(); err != nil {
		v.at("prometheus", "%v", err)
	}
}

func (v *validator) target(p string, t *Target) {
	before := len(v.d.errs)
	embedded := v.cfg.Prometheus.Embedded()
	switch {
	case t.Name == "":
		v.at(p+".name", "required: a unique name, used as the label target=\"<name>\"")
	case len(t.Name) > maxTargetNameLength || !nameRE.MatchString(t.Name):
		v.at(p+".name", "%q: allowed are letters, digits, '_', '.', '-' (at most %d)", t.Name, maxTargetNameLength)
	}
	if s, err := profile.ParseServer(t.Server); err != nil {
		v.at(p+".server", "%v", err)
	} else if s == profile.Unknown && !embedded {
		v.at(p+".server", "auto-detection works in embedded mode only; name the server (%s)", strings.Join(profile.Names(), ", "))
	}
	switch {
	case t.Selector != "":
		if _, err := promql.ParseSelector(t.Selector); err != nil {
			v.at(p+".selector", "not a PromQL label-matcher set such as '{namespace=\"llm\", pod=~\"chat-.*\"}': %s", promqlError(err))
		}
	case !embedded:
		v.at(p+".selector", "required with prometheus.url: the label matchers of the target's pods, e.g. '{namespace=\"llm\", pod=~\"chat-.*\"}'")
	}
	if t.Replicas != "" {
		v.query(p+".replicas", t.Replicas)
	}
	if embedded && len(t.Scrape) == 0 {
		v.at(p+".scrape", "required in embedded mode (no prometheus.url): the /metrics URLs of the replicas")
	}
	urls := map[string]int{}
	for j, s := range t.Scrape {
		u, err := url.Parse(s)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			v.at(fmt.Sprintf("%s.scrape[%d]", p, j), "must be an http:// or https:// URL, got %q", s)
		} else if prev, dup := urls[s]; dup {
			// Read twice, one replica's requests would count twice.
			v.at(fmt.Sprintf("%s.scrape[%d]", p, j), "%q listed twice (also scrape[%d]); one URL per replica", s, prev)
		} else {
			urls[s] = j
		}
	}
	if len(t.Metrics) == 0 {
		v.at(p+".metrics", "at least one metric is required, e.g. {type: queue, target: 24}")
	}
	seen := map[string]bool{}
	for j := range t.Metrics {
		mp := fmt.Sprintf("%s.metrics[%d]", p, j)
		m := &t.Metrics[j]
		if seen[m.Type] && m.Type != "" {
			v.at(mp+".type", "%q listed twice; one entry per signal", m.Type)
		}
		seen[m.Type] = true
		v.metric(mp, m, *t.Min, v.bad(p+".min"))
	}
	v.bounds(p, t)
	if t.Behavior != nil {
		v.behavior(p+".behavior", t.Behavior)
	}
	if t.Lookahead < 0 {
		v.at(p+".lookahead", "must not be negative")
	}
	if t.Zero != nil {
		v.zero(p, t)
	} else if *t.Min == 0 {
		v.at(p+".min", "min: 0 needs a zero: block naming what holds the first request (held:); otherwise use min: 1")
	}
	max := t.Max
	if v.bad(p + ".max") {
		max = nil // not the user's value
	}
	for j := range t.Schedule {
		v.window(fmt.Sprintf("%s.schedule[%d]", p, j), &t.Schedule[j], max)
	}
	// Only when every key of the target is fine (decoded and checked): the
	// policy's own validation then catches what the checks above do not
	// cover; run on a value that failed to decode it would report the zero
	// left in its place.
	if v.decodeErrs[p] == 0 && len(v.d.errs) == before && t.Max != nil {
		if _, err := t.Policy(); err != nil {
			v.at(p, "policy: %v", strings.ReplaceAll(err.Error(), "\n", "; "))
		}
	}
}

// metric checks one metrics[] entry; minBad is true when the target's min
// failed to decode (its value is then not the user's).
func (v *validator) metric(p string, m *Metric, min int, minBad bool) {
	target := m.Target.Value
	switch m.Type {
	case "":
		v.at(p+".type", "required: one of %s", strings.Join(Signals, ", "))
		return
	case "queue", "waiting", "running":
		if m.Target.Duration {
			v.at(p+".target", "%s target is requests per replica (a number), not a duration", m.Type)
		} else if target <= 0 {
			v.at(p+".target", "required: requests per replica, > 0")
		}
	case "kv":
		if m.Target.Duration || target <= 0 || target > 1 {
			v.at(p+".target", "kv target is a KV-cache fraction in (0, 1], e.g. 0.8")
		}
	case "cpu":
		if m.Target.Duration || target <= 0 {
			v.at(p+".target", "cpu target is percent of the pod's CPU request, > 0, e.g. 60")
		}
	case "ttft":
		if target <= 0 {
			v.at(p+".target", "ttft target is seconds or a duration, > 0, e.g. 2s")
		}
		if !(m.Quantile > 0 && m.Quantile < 1) { // NaN too
			v.at(p+".quantile", "must be in (0, 1), e.g. 0.95, got %v", m.Quantile)
		}
	default:
		v.at(p+".type", "unknown signal %q; allowed: %s", m.Type, strings.Join(Signals, ", "))
		return
	}
	if m.Type != "ttft" && v.present(p+".quantile") {
		v.at(p+".quantile", "applies to ttft only")
	}
	if m.Type != "ttft" && v.present(p+".window") {
		// It was accepted and ignored: cpu uses pkg/promql's 2m rate window.
		v.at(p+".window", "applies to ttft only (cpu uses a fixed 2m rate window)")
	} else if m.Window < 0 || (v.present(p+".window") && time.Duration(m.Window) < time.Minute) {
		v.at(p+".window", "must be at least 1m (four scrape intervals of 15s), got %s", m.Window)
	}
	if m.Query != "" {
		v.query(p+".query", m.Query)
		if m.Type == "queue" {
			v.at(p+".query", "queue is running + waiting: override those (a running or waiting metric's query), not queue")
		}
		if v.cfg.Prometheus.Embedded() {
			v.at(p+".query", "query overrides need prometheus.url (embedded mode reads pages, not PromQL)")
		}
	}
	if m.Type == "cpu" && v.cfg.Prometheus.Embedded() {
		v.at(p+".type", "cpu needs prometheus.url (the CPU request comes from kube-state-metrics)")
	}
	if min == 0 && !minBad && (m.Type == "cpu" || m.Type == "kv") {
		v.at(p+".type", "%s cannot wake a target from zero (no pod, no sample); use queue with min: 0", m.Type)
	}
}

func (v *validator) bounds(p string, t *Target) {
	if *t.Min < 0 {
		v.at(p+".min", "must be >= 0, got %d", *t.Min)
	}
	if t.Max == nil {
		if v.bad(p + ".max") {
			return
		}
		v.at(p+".max", "required: the most replicas the target may run (>= 1)")
		return
	}
	if *t.Max < 1 {
		v.at(p+".max", "must be >= 1, got %d", *t.Max)
	}
	if *t.Max > math.MaxInt32 {
		v.at(p+".max", "must be at most %d (the HPA's replicas are int32), got %d", math.MaxInt32, *t.Max)
	}
	if *t.Min > *t.Max && !v.bad(p+".max") && !v.bad(p+".min") {
		v.at(p+".min", "min %d is above max %d", *t.Min, *t.Max)
	}
}

func (v *validator) behavior(p string, b *autoscalingv2.HorizontalPodAutoscalerBehavior) {
	v.rules(p+".scaleUp", b.ScaleUp)
	v.rules(p+".scaleDown", b.ScaleDown)
}

// rules applies the HPA's own validation of HPAScalingRules (Kubernetes
// pkg/apis/autoscaling/validation): window 0..3600 s, at least one policy,
// type Pods|Percent, value > 0, periodSeconds 1..1800, selectPolicy
// Max|Min|Disabled, tolerance >= 0.
func (v *validator) rules(p string, r *autoscalingv2.HPAScalingRules) {
	if r == nil {
		return
	}
	if w := r.StabilizationWindowSeconds; w != nil && (*w < 0 || *w > maxStabilizationWindow) {
		v.at(p+".stabilizationWindowSeconds", "must be 0..%d seconds, got %d", maxStabilizationWindow, *w)
	}
	if s := r.SelectPolicy; s != nil {
		switch *s {
		case autoscalingv2.MaxChangePolicySelect, autoscalingv2.MinChangePolicySelect, autoscalingv2.DisabledPolicySelect:
		default:
			v.at(p+".selectPolicy", "%q: allowed Max, Min, Disabled", *s)
		}
	}
	if v.present(p+".policies") && len(r.Policies) == 0 {
		v.at(p+".policies", "at least one policy is required when policies is given")
	}
	for i, pol := range r.Policies {
		pp := fmt.Sprintf("%s.policies[%d]", p, i)
		switch pol.Type {
		case autoscalingv2.PodsScalingPolicy, autoscalingv2.PercentScalingPolicy:
		default:
			v.at(pp+".type", "%q: allowed Pods, Percent", pol.Type)
		}
		if pol.Value <= 0 {
			v.at(pp+".value", "must be > 0, got %d", pol.Value)
		}
		if pol.PeriodSeconds <= 0 || pol.PeriodSeconds > maxPeriodSeconds {
			v.at(pp+".periodSeconds", "must be 1..%d seconds, got %d", maxPeriodSeconds, pol.PeriodSeconds)
		}
	}
	if r.Tolerance != nil {
		switch {
		case r.Tolerance.Sign() < 0:
			v.at(p+".tolerance", "must be >= 0, got %s", r.Tolerance.String())
		case strings.HasSuffix(p, ".scaleDown") && r.Tolerance.AsApproximateFloat64() >= 1:
			v.at(p+".tolerance", "must be below 1 (a band reaching ratio 0 never scales down), got %s", r.Tolerance.String())
		}
	}
}

func (v *validator) zero(p string, t *Target) {
	if *t.Min != 0 {
		v.at(p+".zero", "scale to zero needs min: 0 (min is %d)", *t.Min)
	}
	if t.Zero.HeldScrape != "" {
		u, err := url.Parse(t.Zero.HeldScrape)
		switch {
		case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
			v.at(p+".zero.held_scrape", "must be an http:// or https:// URL (the activator's /metrics), got %q", t.Zero.HeldScrape)
		case t.Zero.Held != "":
			v.at(p+".zero", "held (PromQL, with prometheus.url) and held_scrape (embedded mode) are exclusive")
		case !v.cfg.Prometheus.Embedded():
			v.at(p+".zero.held_scrape", "is for embedded mode; with prometheus.url use held: 'sum(infscale_activator_held_requests{...})'")
		}
	} else if t.Zero.Held == "" {
		v.at(p+".zero.held", "required: a PromQL expression for the requests held in front of the servers (e.g. sum(keda_http_pending_requests{host=\"chat\"})), or in embedded mode held_scrape: the activator's /metrics URL")
	} else {
		v.query(p+".zero.held", t.Zero.Held)
		if v.cfg.Prometheus.Embedded() {
			v.at(p+".zero", "scale to zero needs prometheus.url (held is a PromQL query)")
		}
	}
	if t.Zero.Cooldown < 0 {
		v.at(p+".zero.cooldown", "must not be negative")
	}
}

func (v *validator) window(p string, w *Window, max *int) {
	if w.Cron == "" {
		v.at(p+".cron", "required: a 5-field cron expression, e.g. \"0 8 * * 1-5\"")
	} else if s, err := cronParser.Parse(w.Cron); err != nil {
		v.at(p+".cron", "%q: %v (5 fields: minute hour day-of-month month day-of-week)", w.Cron, err)
	} else if _, ok := s.(*cron.SpecSchedule); !ok {
		v.at(p+".cron", "%q: @every is relative to the start, not a time of day or week; allowed: 5 fields or @hourly, @daily, @weekly, @monthly, @yearly", w.Cron)
	} else if s.Next(cronNeverRef).IsZero() {
		// robfig's Next gives up after 5 years without a match.
		v.at(p+".cron", "%q never fires (no matching time within 5 years, e.g. a day the month does not have)", w.Cron)
	}
	if w.Duration <= 0 {
		v.at(p+".duration", "required: how long the floor lasts, > 0, e.g. 12h")
	}
	if w.Min < 0 || (max != nil && w.Min > *max) {
		v.at(p+".min", "must be 0..max, got %d", w.Min)
	}
	if t := strings.TrimSpace(w.Cron); strings.HasPrefix(t, "CRON_TZ=") || strings.HasPrefix(t, "TZ=") {
		// robfig's prefix would silently override timezone:.
		v.at(p+".cron", "%q: give the zone in timezone:, not as a CRON_TZ=/TZ= prefix", w.Cron)
	}
	if w.Timezone == "Local" {
		v.at(p+".timezone", "\"Local\" is the machine's zone (UTC in most containers); name an IANA zone, e.g. Europe/Berlin or UTC")
	} else if _, err := time.LoadLocation(w.Timezone); err != nil {
		v.at(p+".timezone", "%q is not an IANA time zone (e.g. Europe/Berlin, UTC): %v", w.Timezone, err)
	}
}

// query validates one PromQL expression; the message carries the parser's
// line:col inside the query.
func (v *validator) query(key, q string) {
	if _, err := promql.Validate(q); err != nil {
		v.at(key, "invalid PromQL: %s", promqlError(err))
	}
}

// promqlError renders a parser error as "at <line:col of the query>: msg".
func promqlError(err error) string {
	var pe parser.ParseErrors
	if errors.As(err, &pe) && len(pe) > 0 {
		e := pe[0]
		return fmt.Sprintf("at %s of the query: %v", e.PositionRange.StartPosInput(e.Query, 0), e.Err)
	}
	return err.Error()
}
