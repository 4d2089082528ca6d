package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/infscale/infscale/cmd/recommender/internal/timearg"
	"github.com/infscale/infscale/internal/httpurl"
	"github.com/infscale/infscale/internal/status"
	"github.com/infscale/infscale/pkg/backtest"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/modelserver"
	"github.com/infscale/infscale/pkg/promql"
	"github.com/infscale/infscale/pkg/recommend"
	"github.com/infscale/infscale/pkg/replay"
	"github.com/infscale/infscale/pkg/replica"
	"github.com/infscale/infscale/pkg/tune"
)

// DefaultBacktestPolicies run when no --policy is given: the queue policy
// and its variants, the recommended preset, the oracle and the hindsight
// optimum (six replays, the optimum's search a few more).
var DefaultBacktestPolicies = []string{"queue:24", "queue:24,lookahead=90", "queue:24,min=0,cooldown=120", "recommended", "oracle", "optimal"}

// minQueryTimeout and maxQueryTimeout bound --query-timeout: a timeout is
// what keeps a hung Prometheus from hanging the command.
const (
	minQueryTimeout = time.Second
	maxQueryTimeout = time.Hour
)

// PrometheusRangeFlags select a target's Prometheus history: where its
// series are (--config and --target, or --prometheus-url and --selector)
// and the range read (--start, --end, --step); shared by backtest, profile
// and tune.
type PrometheusRangeFlags struct {
	Config        string             `placeholder:"FILE" help:"serve's YAML config: the Prometheus, the target's server, selector and replicas query come from it (with --target), and its replica: is the replay's replica where --gpu, --model, --tp and --calibration are not given${configuse}."`
	Target        string             `placeholder:"NAME" help:"Target name in --config."`
	PrometheusURL string             `name:"prometheus-url" placeholder:"URL" help:"Prometheus base URL, e.g. http://prometheus:9090 (instead of --config)."`
	Server        modelserver.Server `default:"vllm" placeholder:"S" help:"Server profile of the series, one with a success counter and a running gauge: vllm, sglang, trtllm, tgi, triton, or epp for an llm-d Endpoint Picker's (with --prometheus-url; default ${default})."`
	Selector      string             `placeholder:"{...}" help:"Label matchers of the target's series, e.g. '{namespace=\"llm\",pod=~\"chat-.*\"}' (with --prometheus-url)."`
	ReplicasQuery string             `name:"replicas-query" placeholder:"Q" help:"PromQL for the replicas that ran, one series (e.g. max(kube_deployment_spec_replicas{namespace=\"llm\",deployment=\"chat\"}): max, not sum, over the copies an HA Prometheus pair returns without dedup); default the target's replicas: query, else its scaleTargetRef's kube-state-metrics gauge (a Deployment's kube_deployment_spec_replicas, ...), else the pods reporting."`
	Start         string             `default:"-7d" placeholder:"T" help:"Start: unix seconds, RFC3339, or relative to now (-7d, -36h, now; a negative one after =, --start=-36h: a bare -36h reads as a flag) (default ${default})."`
	End           string             `default:"now" placeholder:"T" help:"End: unix seconds, RFC3339, or relative to now (--end=-1h, as --start) (default ${default})."`
	Step          time.Duration      `default:"30s" placeholder:"D" help:"Step of the reconstruction and of the range queries, at least 1s (default ${default})."`
	QueryTimeout  time.Duration      `name:"query-timeout" default:"2m" placeholder:"D" help:"Timeout of each query, 1s to 1h (default ${default})."`
	MaxGap        time.Duration      `name:"max-gap" placeholder:"D" help:"Longest silence between samples still read as data (default: 3 x the scrape spacing, at least 2 steps)."`

	now func() time.Time // the clock for relative times (tests set it)
	// pair, when set (backtest, tune), are the pair flags, and pairPD
	// --pd: with --prometheus-url it reads a pair, and the replicas
	// queries override a pair target's.
	pair   *PairSelectFlags
	pairPD bool
}

// PairSelectFlags choose a prefill/decode pair's series with
// --prometheus-url --pd (backtest, tune): each pool's selector and
// replicas query.
type PairSelectFlags struct {
	RoleLabel            string `name:"role-label" default:"llm_d_ai_role" placeholder:"NAME" help:"With --pd and --selector: the series label of llm-d's pod label llm-d.ai/role (prefill, decode), as a labelmap or a PodMonitor's podTargetLabels copies it (default ${default})."`
	PrefillSelector      string `name:"prefill-selector" placeholder:"{...}" help:"With --pd and --prometheus-url: the prefill pool's own label matchers, e.g. '{namespace=\"llm\",pod=~\"chat-prefill-.*\"}' (instead of --selector with --role-label)."`
	DecodeSelector       string `name:"decode-selector" placeholder:"{...}" help:"With --pd and --prometheus-url: the decode pool's own label matchers (instead of --selector with --role-label)."`
	PrefillReplicasQuery string `name:"prefill-replicas-query" placeholder:"Q" help:"For a pair: PromQL for the replicas the prefill pool ran, one series; default the role's replicas: or scaleTargetRef with --config, else the pods reporting."`
	DecodeReplicasQuery  string `name:"decode-replicas-query" placeholder:"Q" help:"For a pair: PromQL for the replicas the decode pool ran (as --prefill-replicas-query)."`
}

// pairOnly are PairSelectFlags' flags: they need --pd or a pair target.
var pairOnly = []string{"role-label", "prefill-selector", "decode-selector", "prefill-replicas-query", "decode-replicas-query"}

// resolved is what PrometheusRangeFlags resolve to.
type resolved struct {
	api    promql.API
	target backtest.Target
	grid   backtest.Grid
	// policy is the --config target's own policy (nil without --config),
	// named config:<target>.
	policy *replay.Policy
	// serve is where a serve config reads the target's series (tune's
	// printed block).
	serve tune.Serve
	// replica is the --config target's replica: (nil: none or no
	// --config), the replay's replica where the flags do not say.
	replica *config.Replica
	// deprecations are the --config file's keys under old names, for
	// warnConfig.
	deprecations []config.Error
	// warnings are what else the flags and file resolved to that a user
	// should know (a scaleTargetRef read as the pods reporting).
	warnings []string
	// pair is the two pools of a prefill/decode pair (a --config target
	// with roles:, or --prometheus-url --pd); target is then unset.
	pair *pairTarget
	// tune is the --config target's tune: block (nil: none): tune's SLO
	// and budget where --slo-ttft and --max-miss are not given.
	tune *config.Tune
}

// pairTarget is a P/D pair's history, a --config target with roles: or
// --prometheus-url --pd: each pool's series and the target's own pair
// rule.
type pairTarget struct {
	// name is the --config target's ("" with --prometheus-url); of names
	// the pair in errors ("target chat", "--pd").
	name, of string
	// roles are the prefill then the decode pool's series; check says,
	// per pool, what chooses them (for a pool without traffic).
	roles [2]backtest.Target
	check [2]string
	// policy is the --config target's own pair rule, named
	// config:<target>; nil with --prometheus-url.
	policy *replay.PDPolicy
}

// pairRoles are a pair's roles in pairTarget.roles' order.
var pairRoles = [2]recommend.Role{recommend.RolePrefill, recommend.RoleDecode}

// historyOnly are the flags that choose a history (the config's series
// or --prometheus-url's); historyGiven returns the first of them given.
var historyOnly = []string{"config", "target", "prometheus-url", "server", "selector", "replicas-query", "start", "end", "step", "query-timeout", "max-gap",
	"role-label", "prefill-selector", "decode-selector", "prefill-replicas-query", "decode-replicas-query"}

func historyGiven(given map[string]bool) string {
	for _, name := range historyOnly {
		if given[name] {
			return name
		}
	}
	return ""
}

// resolve checks the flags (exit 2 on bad input) and builds the client:
// the steps (grid), where the series are (fromConfig or fromURL), the
// target read from there, and the Prometheus client.
func (f *PrometheusRangeFlags) resolve(given map[string]bool, stderr io.Writer) (resolved, error) {
	var r resolved
	var err error
	if r.grid, err = f.grid(); err != nil {
		return r, err
	}
	if err := f.pairFlagsOK(given); err != nil {
		return r, err
	}
	var w where
	switch {
	case f.Target != "" && f.Config == "":
		return r, invalidf("--target %q needs --config FILE (with --prometheus-url, give --selector)", f.Target)
	case f.Config != "" && f.PrometheusURL != "":
		return r, invalidf("give either --config with --target, or --prometheus-url with --selector, not both")
	case f.Config != "":
		w, err = f.fromConfig(given, &r)
	case f.PrometheusURL != "" && f.pair != nil && f.pairPD:
		w, err = f.pairFromURL(given, &r)
	case f.PrometheusURL != "":
		w, err = f.fromURL(&r)
	default:
		return r, invalidf("give --config FILE --target NAME, or --prometheus-url URL --selector '{...}'")
	}
	if err != nil {
		return r, err
	}
	if r.pair == nil {
		if r.target, err = w.target(); err != nil {
			return r, err
		}
	}
	cfg := w.client
	cfg.Retries = historyRetries
	cfg.OnRetry = retryNotice(stderr)
	cfg.TimeoutName = "--query-timeout"
	c, err := promql.NewClient(cfg)
	if err != nil {
		return r, invalid(err)
	}
	r.api = c
	return r, nil
}

// retryNotice writes one line on w per wait of a retried query: up to 5
// waits of a minute each would otherwise pass in silence. On a terminal
// it first clears the progress line.
func retryNotice(w io.Writer) func(query, cause string, wait time.Duration, ask, asks int) {
	clear := ""
	if status.New(w).Active() {
		clear = "\r\033[K"
	}
	var mu sync.Mutex
	return func(_, cause string, wait time.Duration, ask, asks int) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "%sinfscale: Prometheus could not answer now (%s): asking again in %s (ask %d of %d)\n", clear, cause, wait.Round(time.Second), ask, asks)
	}
}

// historyRetries is how many times backtest, profile and tune ask a query
// of the history (range or instant) again when Prometheus answers that it
// cannot now (a 5xx, a 429: it restarts, it is overloaded) or the
// connection is cut or refused after an answer (promql.HistoryRetries,
// serve's in-process tuning's too).
const historyRetries = promql.HistoryRetries

// grid checks --start, --end, --step, --query-timeout and --max-gap and
// returns the steps from --start (truncated to a step) to --end.
func (f *PrometheusRangeFlags) grid() (backtest.Grid, error) {
	now := time.Now
	if f.now != nil {
		now = f.now
	}
	clock := now().UTC().Truncate(time.Second)
	start, err := parseTime(f.Start, clock)
	if err != nil {
		return backtest.Grid{}, invalidf("--start %s: %v", f.Start, err)
	}
	end, err := parseTime(f.End, clock)
	if err != nil {
		return backtest.Grid{}, invalidf("--end %s: %v", f.End, err)
	}
	if f.Step < backtest.MinStep {
		return backtest.Grid{}, invalidf("--step %s: want at least %s, e.g. 30s (Prometheus scrapes at most once a second: a shorter step only repeats samples)", f.Step, backtest.MinStep)
	}
	if err := durationIn("query-timeout", f.QueryTimeout, minQueryTimeout, maxQueryTimeout, "each Prometheus query's; 0 would disable it and a hung Prometheus would hang the command"); err != nil {
		return backtest.Grid{}, err
	}
	if f.MaxGap != 0 && f.MaxGap < f.Step {
		return backtest.Grid{}, invalidf("--max-gap %s: want at least --step (%s); a shorter silence than a step is not a gap", f.MaxGap, f.Step)
	}
	if !end.After(start) {
		return backtest.Grid{}, invalidf("--start %s is not before --end %s", start.Format(time.RFC3339), end.Format(time.RFC3339))
	}
	g, err := backtest.NewGrid(start.Truncate(f.Step), end, f.Step)
	if err != nil {
		// Name the flags: "range ... is shorter than one step" said none.
		return backtest.Grid{}, invalidf("--start %s, --end %s, --step %s: %v (the range starts at --start rounded down to a step)", f.Start, f.End, f.Step, err)
	}
	return g, nil
}

// where is where a history's series are read: the Prometheus client and
// the target's server profile, selector and replicas query.
type where struct {
	client   promql.ClientConfig
	server   modelserver.Server
	selector string
	replicas string
}

// fromConfig reads --config's --target: where its series are, and r's
// policy, replica and serve.
func (f *PrometheusRangeFlags) fromConfig(given map[string]bool, r *resolved) (where, error) {
	for _, name := range []string{"server", "selector"} {
		if given[name] {
			return where{}, invalidf("--%s goes with --prometheus-url; with --config the target's %s is read (edit it there, or give --prometheus-url instead)", name, name)
		}
	}
	file, err := loadConfig(f.Config)
	if err != nil {
		return where{}, err
	}
	r.deprecations = file.Deprecations
	var tg *config.Target
	var names []string
	for i := range file.Targets {
		names = append(names, file.Targets[i].Name)
		if file.Targets[i].Name == f.Target {
			tg = &file.Targets[i]
		}
	}
	if f.Target == "" {
		// Read first, so the error can say which names there are.
		return where{}, invalidf("--config %s needs --target NAME, the target whose history to read (targets: %s)", f.Config, strings.Join(names, ", "))
	}
	if tg == nil {
		return where{}, invalidf("--target %q: not in %s (targets: %s)", f.Target, f.Config, strings.Join(names, ", "))
	}
	if f.pair != nil && tg.Roles == nil {
		if f.pairPD {
			return where{}, invalidf("--pd: --target %s of %s is one pool (no roles:); leave out --pd, or give a pair target", f.Target, f.Config)
		}
		for _, name := range []string{"prefill-replicas-query", "decode-replicas-query"} {
			if given[name] {
				return where{}, invalidf("--%s: --target %s of %s is one pool (no roles:); give --replicas-query", name, f.Target, f.Config)
			}
		}
	}
	if file.Prometheus.Embedded() {
		return where{}, invalidf("%s: no prometheus.url (the file scrapes the replicas): a target's history comes from Prometheus range queries; add prometheus.url, or give --prometheus-url and --selector instead of --config", f.Config)
	}
	rt, err := file.Prometheus.RoundTripper()
	if err != nil {
		return where{}, invalidf("%s: prometheus http client: %v", f.Config, err)
	}
	if tg.Roles != nil {
		return f.pairFromConfig(given, tg, r, promql.ClientConfig{URL: file.Prometheus.URL, RoundTripper: rt, Timeout: f.QueryTimeout})
	}
	w := where{
		client:   promql.ClientConfig{URL: file.Prometheus.URL, RoundTripper: rt, Timeout: f.QueryTimeout},
		server:   tg.Server,
		selector: tg.Selector,
		replicas: f.ReplicasQuery,
	}
	if w.replicas == "" {
		w.replicas = r.historyReplicas(f.Config, tg, "give --replicas-query Q")
	}
	rp, err := tg.Policy()
	if err != nil {
		return where{}, invalidf("%s: target %s: %v", f.Config, tg.Name, err)
	}
	pol, err := replay.FromRecommend("config:"+tg.Name, &rp)
	if err != nil {
		return where{}, invalidf("%s: target %s: %v", f.Config, tg.Name, err)
	}
	r.policy = &pol
	r.replica, r.tune = tg.Replica, tg.Tune
	r.serve = tune.Serve{Name: tg.Name, PrometheusURL: file.Prometheus.URL, Server: w.server.String(), Selector: w.selector, Replicas: w.replicas, From: f.Config}
	if cooldown, ok := tg.ScalesToZero(); ok { // tuned at zero, as tune --shard tunes it
		r.serve.Zero = tg.Zero
		if r.serve.Zero == nil {
			r.serve.Zero = &config.Zero{Cooldown: model.Duration(cooldown)}
		}
	}
	return w, nil
}

// historyReplicas is the replicas query of tg's history
// (config.Target.HistoryReplicas); a scaleTargetRef it cannot read is a
// warning naming the target (target@role for a pool), that the pods
// reporting are read instead, and fix (what else to do) when not "".
func (r *resolved) historyReplicas(file string, tg *config.Target, fix string) string {
	q, err := tg.HistoryReplicas()
	if err != nil {
		msg := fmt.Sprintf("%s: target %s: %v; the replicas that ran are read as the pods reporting", file, tg.Key(), err)
		if fix != "" {
			msg += " (" + fix + ")"
		}
		r.warnings = append(r.warnings, msg)
	}
	return q
}

// warn prints the config's deprecations and r's warnings on stderr.
func (r resolved) warn(stderr io.Writer) {
	warnConfig(stderr, r.deprecations)
	for _, w := range r.warnings {
		fmt.Fprintf(stderr, "infscale: warning: %s\n", w)
	}
}

// pairFromConfig reads P/D target tg of --config: each role's selector
// and replicas query (roles.ROLE.selector and .replicas), and r's pair,
// policy and replica.
func (f *PrometheusRangeFlags) pairFromConfig(given map[string]bool, tg *config.Target, r *resolved, client promql.ClientConfig) (where, error) {
	if given["replicas-query"] {
		return where{}, invalidf("--replicas-query: %s's target %s is a prefill/decode pair; each pool's replicas query is its roles.ROLE.replicas in the file, else its scaleTargetRef's kube-state-metrics gauge, else the pods reporting", f.Config, tg.Name)
	}
	pt := &pairTarget{name: tg.Name, of: "target " + tg.Name}
	var pols [2]recommend.Policy
	for i, role := range pairRoles {
		rt, _ := tg.RoleTarget(role)
		if rt.Selector == "" {
			return where{}, invalidf("%s: target %s: roles.%s has no selector: a backtest reads each pool's series from Prometheus by its selector (add roles.%s.selector, e.g. '{pod=~\"%s-%s-.*\"}')", f.Config, tg.Name, role, role, tg.Name, role)
		}
		reps := f.roleReplicasQuery(i)
		if reps == "" {
			reps = r.historyReplicas(f.Config, &rt, "give --"+role.String()+"-replicas-query Q")
		}
		t, err := where{server: tg.Server, selector: rt.Selector, replicas: reps}.target()
		if err != nil {
			return where{}, invalidf("%s: target %s: roles.%s: %v", f.Config, tg.Name, role, err)
		}
		pt.roles[i] = t
		pt.check[i] = fmt.Sprintf("roles.%s.selector in %s, and the target's server", role, f.Config)
		if pols[i], err = rt.Policy(); err != nil {
			return where{}, invalidf("%s: target %s: roles.%s: %v", f.Config, tg.Name, role, err)
		}
	}
	pol, err := replay.FromRecommendPair("config:"+tg.Name, &pols[0], &pols[1])
	if err != nil {
		return where{}, invalidf("%s: target %s: %v", f.Config, tg.Name, err)
	}
	pt.policy = &pol
	r.pair, r.replica = pt, tg.Replica
	return where{client: client}, nil
}

// urlClient checks --prometheus-url: where its client reads.
func (f *PrometheusRangeFlags) urlClient() (where, error) {
	u, err := httpurl.Parse(f.PrometheusURL)
	shown := redactURL(f.PrometheusURL) // as typed (not re-escaped), but no password
	switch {
	case errors.Is(err, httpurl.ErrPort):
		return where{}, invalidf("--prometheus-url %s: %v", shown, err)
	case err != nil:
		return where{}, invalidf("--prometheus-url %s: want http://HOST[:PORT][/PATH] or https://...", shown)
	case strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), "/api/v1"):
		return where{}, invalidf("--prometheus-url %s: the base URL without /api/v1 (the client adds /api/v1/query), e.g. http://prometheus:9090", shown)
	}
	return where{client: promql.ClientConfig{URL: f.PrometheusURL, Timeout: f.QueryTimeout}}, nil
}

// fromURL reads --prometheus-url, --server, --selector and
// --replicas-query: where the series are, and r's serve.
func (f *PrometheusRangeFlags) fromURL(r *resolved) (where, error) {
	w, err := f.urlClient()
	if err != nil {
		return where{}, err
	}
	if f.Selector == "" {
		return where{}, invalidf("--prometheus-url needs --selector '{...}'")
	}
	w.server, w.selector, w.replicas = f.Server, f.Selector, f.ReplicasQuery
	// A config file shown on stdout holds no password.
	r.serve = tune.Serve{PrometheusURL: redactURL(f.PrometheusURL), Server: w.server.String(), Selector: w.selector, Replicas: w.replicas}
	return w, nil
}

// pairFlagsOK refuses the pair flags (PairSelectFlags) that contradict
// the others or would be ignored, each naming the flag; what needs the
// --config target (one pool or a pair) is checked in fromConfig.
func (f *PrometheusRangeFlags) pairFlagsOK(given map[string]bool) error {
	p := f.pair
	if p == nil {
		return nil
	}
	byURL := f.PrometheusURL != "" && f.Config == ""
	for _, name := range pairOnly {
		switch {
		case !given[name]:
		case f.Config != "" && (name == "role-label" || strings.HasSuffix(name, "-selector")):
			return invalidf("--%s goes with --prometheus-url --pd; with --config each pool's series are its roles.ROLE.selector in the file", name)
		case byURL && !f.pairPD:
			return invalidf("--%s reads a prefill/decode pair: add --pd", name)
		}
	}
	if !byURL || !f.pairPD {
		return nil
	}
	both := p.PrefillSelector != "" && p.DecodeSelector != ""
	switch {
	case given["replicas-query"]:
		return invalidf("--replicas-query reads one pool; with --pd give --prefill-replicas-query and --decode-replicas-query")
	case both && f.Selector != "":
		return invalidf("--selector: --prefill-selector and --decode-selector give both pools; drop --selector (or one of them, to split --selector by --role-label for that pool)")
	case both && given["role-label"]:
		return invalidf("--role-label: --prefill-selector and --decode-selector give both pools, so no selector is split by it; drop --role-label")
	case !both && f.Selector == "":
		return invalidf("--pd needs --selector '{...}' (each pool its --role-label %s=\"prefill\" or \"decode\"), or --prefill-selector and --decode-selector", p.RoleLabel)
	}
	return nil
}

// roleReplicasQuery is --prefill-replicas-query (i 0) or
// --decode-replicas-query (1); "" without the pair flags.
func (f *PrometheusRangeFlags) roleReplicasQuery(i int) string {
	if f.pair == nil {
		return ""
	}
	return [2]string{f.pair.PrefillReplicasQuery, f.pair.DecodeReplicasQuery}[i]
}

// pairFromURL reads --prometheus-url --pd: each pool's series, its own
// --prefill-selector / --decode-selector or --selector split by
// --role-label (backtest.SplitPair), and its replicas query.
func (f *PrometheusRangeFlags) pairFromURL(given map[string]bool, r *resolved) (where, error) {
	if f.Server == modelserver.EPP {
		// llm-d's P/D InferencePool selects both roles' pods: the EPP's
		// series are the whole pair's, and carry no role label.
		return where{}, invalidf("--server epp with --pd: the Endpoint Picker's series describe its whole InferencePool, both roles' pods, and cannot be split by role; read each pool from its model-server pods' series (--server vllm)")
	}
	w, err := f.urlClient()
	if err != nil {
		return where{}, err
	}
	p := f.pair
	var split [2][]*labels.Matcher
	if f.Selector != "" {
		base, err := promql.ParseSelector(f.Selector)
		if err != nil {
			return where{}, invalidf("--selector: not a PromQL label-matcher set such as '{namespace=\"llm\"}' (quote it for the shell): %v", err)
		}
		if split, err = backtest.SplitPair(base, p.RoleLabel); err != nil {
			flag := "--selector"
			if given["role-label"] {
				flag = "--role-label"
			}
			return where{}, invalidf("%s: %v", flag, err)
		}
	}
	pt := &pairTarget{of: "--pd"}
	var flags [2]string // the flag that chose each pool's series
	for i, own := range [2]string{p.PrefillSelector, p.DecodeSelector} {
		role := pairRoles[i]
		sel, selFlag := own, "--"+role.String()+"-selector"
		flags[i] = selFlag
		if own == "" {
			flags[i] = "--selector split by --role-label"
		}
		pt.check[i] = selFlag + " and --server"
		if own == "" {
			var ms []string
			for _, m := range split[i] {
				ms = append(ms, m.String())
			}
			sel, selFlag = "{"+strings.Join(ms, ",")+"}", "--selector"
			pt.check[i] = fmt.Sprintf("--selector, --role-label %s (does the scrape copy llm-d.ai/role to the series?) and --server", p.RoleLabel)
		}
		t, err := where{server: f.Server, selector: sel, replicas: f.roleReplicasQuery(i)}.target()
		if err != nil {
			msg := err.Error()
			for from, to := range map[string]string{"--selector:": selFlag + ":", "--replicas-query:": "--" + role.String() + "-replicas-query:"} {
				if strings.HasPrefix(msg, from) {
					msg = to + strings.TrimPrefix(msg, from)
				}
			}
			return where{}, invalid(errors.New(msg))
		}
		pt.roles[i] = t
	}
	// Both pools on one series set: each pool's replay would be the
	// whole pair's traffic.
	if a, b := promql.MatcherSet(pt.roles[0].Selector), promql.MatcherSet(pt.roles[1].Selector); slices.Equal(a, b) {
		return where{}, invalidf("%s and %s select the same series {%s}: each pool's selector must match its own pods only (e.g. pod=~\"chat-prefill-.*\" and pod=~\"chat-decode-.*\")", flags[0], flags[1], strings.Join(a, ","))
	}
	// One pool's matchers all among the other's: it selects every series
	// of the other pool too, and its replay would count both pools.
	for i := range 2 {
		if promql.Covers(pt.roles[i].Selector, pt.roles[1-i].Selector) {
			a, b := promql.MatcherSet(pt.roles[i].Selector), promql.MatcherSet(pt.roles[1-i].Selector)
			return where{}, invalidf("%s {%s} selects every series that %s {%s} selects: the %s pool would count the %s pool's pods too; add a matcher only the %s pods carry (e.g. pod=~\"chat-%s-.*\")",
				flags[i], strings.Join(a, ","), flags[1-i], strings.Join(b, ","), pairRoles[i], pairRoles[1-i], pairRoles[i], pairRoles[i])
		}
	}
	r.pair = pt
	return w, nil
}

// target checks w's server profile, selector and replicas query.
func (w where) target() (backtest.Target, error) {
	if w.server == modelserver.Unknown {
		return backtest.Target{}, invalidf("--server: give the server profile (allowed: %s)", strings.Join(modelserver.Names(), ", "))
	}
	if err := backtest.CheckServer(w.server); err != nil {
		return backtest.Target{}, invalidf("--server: %v", err)
	}
	ms, err := promql.ParseSelector(w.selector)
	if err != nil {
		return backtest.Target{}, invalidf("--selector: not a PromQL label-matcher set such as '{namespace=\"llm\", pod=~\"chat-.*\"}' (quote it for the shell): %v", err)
	}
	if w.replicas != "" {
		if _, err := promql.Validate(w.replicas); err != nil {
			return backtest.Target{}, invalidf("--replicas-query: %v", err)
		}
	}
	return backtest.Target{Server: w.server, Selector: ms, Replicas: w.replicas}, nil
}

// parseTime reads --start and --end: timearg.Parse with "now" and
// relative times, within timearg.To2262 (spans are time.Durations).
func parseTime(s string, now time.Time) (time.Time, error) {
	return timearg.Parse(s, now, true, timearg.To2262)
}

// BacktestCmd is `infscale backtest`: last week's Prometheus history
// through the simulator under several policies, beside what actually ran.
type BacktestCmd struct {
	PrometheusRangeFlags `embed:"" set:"configuse=, and its own policy is replayed as the row config:NAME"`
	PD                   bool `name:"pd" help:"The history is a prefill/decode (P/D) pair (docs/llm-d.md): with --prometheus-url each pool's series are --selector's with --role-label prefill or decode, or its own --prefill-selector / --decode-selector; with --config the target must have roles: (it is read as a pair without the flag)."`
	PairSelectFlags      `embed:""`
	ReplicaFlags         `embed:""`

	Policy  []string      `short:"p" sep:"none" placeholder:"P" help:"Policy to replay (repeatable; commas belong to the policy): SIGNAL:TARGET[,OPTION=VALUE...], fixed:N, knative:C, oracle, optimal, hpa(POLICY), recommended, llmd-queue, llmd-saturation, llmd-tokens, llmd-slo (as infscale simulate). Default: queue:24, queue:24,lookahead=90, queue:24,min=0,cooldown=120, recommended, oracle, optimal. For a prefill/decode pair (a --config target with roles:, or --pd) the policies are simulate --pd's (recommended(prefill=TP,decode=TD), pd(PREFILL;DECODE), ...), default recommended, optimal and the four llm-d baselines."`
	SLOTTFT time.Duration `name:"slo-ttft" default:"2s" placeholder:"D" help:"TTFT SLO: a request misses when its first token takes longer (default ${default})."`
	Period  time.Duration `default:"15s" placeholder:"D" help:"How often the simulated policies decide (default ${default})."`
	Seed    uint64        `default:"1" help:"Seed of the arrivals within a step and of the token draws."`
	Plot    string        `placeholder:"FILE" help:"Draw arrivals, actual and simulated replicas and TTFT to FILE (.png or .svg); for a prefill/decode pair each pool's replicas in a panel of its own."`
	Output  string        `short:"o" enum:"text,json,csv" default:"text" help:"Output format: text, json or csv."`
	Quiet   bool          `name:"quiet" short:"q" help:"No progress on stderr (otherwise one line redrawn on a terminal, a plain line every 10% or 10 s on a redirected stderr)."`

	KVLink string `name:"kv-link" default:"25GB" placeholder:"B" help:"For a prefill/decode pair (a --config target with roles:, or --pd): the link that moves a prompt's KV from prefill to decode, bytes per second, or nvlink (as simulate --pd; default ${default})."`

	Calibrate       string        `name:"calibrate" type:"path" placeholder:"FILE" help:"Fit the replica model (the replica flags' GPU, model and TP) to the target's own history, write the calibration file here and replay with it: each pod's mean ITL against its mean running and prompt tokens per window (the KV read efficiency too when the prompts differ 1.5x or more), its TTFT against prompt tokens in windows where nothing waited; the last quarter of the range is held out and its prediction error reported."`
	CalibrateWindow time.Duration `name:"calibrate-window" default:"2m" placeholder:"D" help:"Window of the calibration's per-pod means, at least two scrape intervals (default ${default})."`
}

// Run fetches, reconstructs, replays and reports.
func (c *BacktestCmd) Run(e *env) error {
	c.PrometheusRangeFlags.pair, c.PrometheusRangeFlags.pairPD = &c.PairSelectFlags, c.PD
	res, err := c.resolve(e.given, e.stderr)
	if err != nil {
		return err
	}
	res.warn(e.stderr)
	if c.SLOTTFT <= 0 {
		return invalidf("--slo-ttft %v: want a duration > 0", c.SLOTTFT)
	}
	if err := sloTTFTAtMost(c.SLOTTFT); err != nil {
		return err
	}
	if c.Period < time.Duration(replay.MinPeriod*float64(time.Second)) {
		return invalidf("--period %v: want at least %gs (policies observe what a scrape shows)", c.Period, replay.MinPeriod)
	}
	if err := checkPeriodSpan(e.given, c.Period, res.grid.End().Sub(res.grid.Start).Seconds()); err != nil {
		return err
	}
	if res.pair != nil {
		return c.runPair(e, res)
	}
	if e.given["kv-link"] {
		return invalidf("--kv-link goes with a prefill/decode pair (a --config target with roles:, or --pd)")
	}
	specs := c.Policy
	if len(specs) == 0 {
		specs = DefaultBacktestPolicies
	}
	if err := repeatedPolicy(specs); err != nil {
		return err
	}
	var pols []replay.Policy
	for i, s := range specs {
		p, err := replay.ParsePolicy(policySpec(s))
		if err != nil {
			return invalidf("--policy #%d: %v", i+1, err)
		}
		pols = append(pols, p)
	}
	if err := c.plotOK(); err != nil {
		return err
	}
	if res.policy != nil {
		pols = append([]replay.Policy{*res.policy}, pols...)
	}
	if err := needsFlag(e.given, "calibrate-window", c.Calibrate != "", "--calibrate FILE (it is the window of the fit's per-pod means)"); err != nil {
		return err
	}
	var calGrid backtest.Grid
	if c.Calibrate != "" {
		if c.Calibration != "" {
			return invalidf("--calibrate fits a calibration from the history; --calibration %s would be replaced by it (give one of them)", c.Calibration)
		}
		if c.CalibrateWindow < time.Second {
			return invalidf("--calibrate-window %s: want at least 1s (two scrape intervals or more)", c.CalibrateWindow)
		}
		if calGrid, err = backtest.NewGrid(res.grid.Start, res.grid.End(), c.CalibrateWindow); err != nil {
			return invalidf("--calibrate-window %s: %v", c.CalibrateWindow, err)
		}
		if err := calibrationPathOK(c.Calibrate, "the fit"); err != nil {
			return err
		}
	}
	c.fromTarget(res.replica, c.Calibrate == "") // --calibrate fits its own
	model, err := c.Replica()
	if err != nil {
		return err
	}
	// One percentage over the whole command: the queries (and the
	// calibration's) the first fifth, the replays the rest.
	prog := status.NewProgress(e.stderr, "backtest", 1, c.Quiet)
	defer prog.Done()
	h, st, err := backtest.Fetch(e.ctx, res.api, res.target, res.grid, func(done, total int) {
		prog.Set(0.1 * float64(done) / float64(total))
	})
	if err != nil {
		return fmt.Errorf("backtest: %w", err)
	}
	var fit *backtest.CalibrationFit
	if c.Calibrate != "" {
		var cst backtest.FetchStats
		if model, fit, cst, err = c.calibrate(e, res, calGrid, h, prog); err != nil {
			return err
		}
		st.Queries, st.Points, st.Duration = st.Queries+cst.Queries, st.Points+cst.Points, st.Duration+cst.Duration
		st.Warnings, st.Queried = append(st.Warnings, cst.Warnings...), append(st.Queried, cst.Queried...)
	}
	w, err := backtest.Reconstruct(h, backtest.Options{GapThreshold: c.MaxGap})
	if err != nil {
		return res.reconstructError(e.ctx, "backtest", err, st.Queried)
	}
	var notes strings.Builder // the memory budget's, said after the progress line
	cfg := backtest.Config{Policies: pols, Seed: c.Seed, GPUs: float64(model.Config().TP), Replay: replay.Config{
		Model: model, SLOTTFT: c.SLOTTFT.Seconds(), Period: c.Period.Seconds(),
		Progress: func(now, end float64) {
			if end > 0 && !math.IsInf(end, 0) {
				prog.Set(0.2 + 0.8*now/end) // the least advanced policy (replay.RunAll)
			}
		},
		Size: replaySizer(&notes),
	}}
	rep, err := backtest.Run(e.ctx, w, cfg)
	prog.Done()
	fmt.Fprint(e.stderr, notes.String())
	if err != nil {
		return fmt.Errorf("backtest: %w", err)
	}
	for _, r := range rep.Policies {
		warnShed(e.stderr, r.Result)
	}
	if w := rep.SLOWarning(); w != "" {
		fmt.Fprintf(e.stderr, "warning: %s\n", w)
	}
	rep.Fetch = st
	rep.Calibration, rep.CalibrationFile = fit, c.Calibrate
	rep.Replica = c.calibratedName()
	if fit != nil {
		rep.Replica = "the replica calibrated to this history (" + c.Calibrate + ")"
	}
	if fit != nil && c.Output == "csv" {
		if err := fit.WriteText(e.stderr, c.Calibrate); err != nil {
			return err
		}
	}
	if c.Plot != "" {
		if err := plotBacktest(e.stderr, c.Plot, rep, c.SLOTTFT.Seconds()); err != nil {
			return fmt.Errorf("--plot: %w", err)
		}
	}
	switch c.Output {
	case "json":
		return rep.WriteJSON(e.stdout)
	case "csv":
		return rep.WriteCSV(e.stdout)
	}
	return rep.WriteText(e.stdout)
}

// plotOK checks --plot when given: a .png or .svg file (either case, as
// simulate and tune take it) in a directory that exists.
func (c *BacktestCmd) plotOK() error {
	_, err := plotFileFormat(c.Plot)
	return err
}

// calibrate fits the replica flags' model to the target's history over g
// (windows of --calibrate-window), holding out the last quarter of the
// span its windows cover (backtest.HoldOutSplit), writes the calibration
// file and returns the calibrated replica with the fit and the statistics
// of its queries.
func (c *BacktestCmd) calibrate(e *env, res resolved, g backtest.Grid, h backtest.History, prog *status.Progress) (*replica.Replica, *backtest.CalibrationFit, backtest.FetchStats, error) {
	base, err := c.ReplicaFlags.Config()
	if err != nil {
		return nil, nil, backtest.FetchStats{}, err
	}
	ws, st, err := backtest.FetchWindows(e.ctx, res.api, res.target, g, func(done, total int) {
		prog.Set(0.1 + 0.1*float64(done)/float64(total))
	})
	if err != nil {
		return nil, nil, st, fmt.Errorf("backtest --calibrate: %w", err)
	}
	fit, err := backtest.Calibrate(base, ws, h.PromptMean, h.OutputMean, backtest.HoldOutSplit(ws, g))
	if err != nil {
		return nil, nil, st, fmt.Errorf("backtest --calibrate: %w", err)
	}
	at := c.PrometheusURL
	if u, err := url.Parse(at); err == nil {
		at = u.Redacted() // no password in the file
	}
	of := fmt.Sprintf("%s at %s", c.Selector, at)
	if c.PrometheusRangeFlags.Config != "" {
		of = fmt.Sprintf("target %s of %s", c.Target, c.PrometheusRangeFlags.Config)
	}
	// The command as typed (the URL's password redacted), as load's: the
	// replica flags it was fitted with (--calibrated, --dtype, ...) are
	// those a replica it is applied to needs (Calibration.Apply).
	fit.Calibration.Source = fmt.Sprintf("%s: Prometheus history of %s (%s) over %s..%s, windows of %s",
		commandLine(redactArgs(e.args, "prometheus-url", c.PrometheusURL, at)), of, res.target.Server, g.Start.Format(time.RFC3339), g.End().Format(time.RFC3339), g.Step)
	if err := writeCalibrationFile(c.Calibrate, fit.Calibration); err != nil {
		return nil, nil, st, err
	}
	cfg, err := fit.Calibration.Apply(base)
	if err != nil {
		return nil, nil, st, err
	}
	r, err := replica.New(cfg)
	if err != nil {
		return nil, nil, st, fmt.Errorf("backtest --calibrate: the calibrated replica: %w", err)
	}
	return r, &fit, st, nil
}

// reconstructError is cmd's error for a failed Reconstruct of res's
// history: with no traffic it names the counter's query as it was sent
// (queried[0], the success counter's, with the selector: what to paste
// into Prometheus), the range and the flags that choose them, since a
// selector matching nothing is the usual cause.
func (res resolved) reconstructError(ctx context.Context, cmd string, err error, queried []string) error {
	if errors.Is(err, backtest.ErrNoTraffic) {
		what := res.target.Server.Families().Requests[0]
		if len(queried) > 0 {
			what = queried[0]
		}
		check := "check --selector and --server"
		if res.policy != nil { // --config: the target's keys chose them
			check = "check the target's selector: and server: in the config, and --start/--end"
		}
		if why := backtest.DiagnoseNoTraffic(ctx, res.api, res.target, res.grid); why != "" {
			check = why + "; " + check
		}
		return fmt.Errorf("%s: %w: %s over %s..%s (%s)", cmd, err,
			what, res.grid.Start.Format(time.RFC3339), res.grid.End().Format(time.RFC3339), check)
	}
	if errors.Is(err, backtest.ErrTooManyRequests) {
		return fmt.Errorf("%s: %w over %s..%s; %s a shorter range (--start, --end)", cmd, err,
			res.grid.Start.Format(time.RFC3339), res.grid.End().Format(time.RFC3339), cmd)
	}
	return fmt.Errorf("%s: %w", cmd, err)
}
