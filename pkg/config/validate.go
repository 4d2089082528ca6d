package config

import (
	"errors"
	"fmt"
	"io/fs"
	neturl "net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/goccy/go-yaml/token"
	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql/parser"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/infscale/infscale/internal/boundedfile"
	"github.com/infscale/infscale/internal/httpurl"
	"github.com/infscale/infscale/internal/quantity"
	"github.com/infscale/infscale/internal/sourcekey"
	"github.com/infscale/infscale/pkg/modelserver"
	"github.com/infscale/infscale/pkg/promql"
	"github.com/infscale/infscale/pkg/recommend"
	"github.com/infscale/infscale/pkg/replica"
)

var nameRE = regexp.MustCompile(`^[a-zA-Z0-9_.-]+$`)

// validator checks values after decoding; every check runs (no early return)
// and reports at the position the decoder recorded for the key.
type validator struct {
	d   *strictDecoder
	cfg *File
	// failed are the keys the decoder already reported.
	failed map[string]bool
	// said are the keys this package reported on already, which the
	// policy's rules do not report again.
	said map[string]bool
	// workloads maps each workload named by a scaleTargetRef
	// (namespace/group/kind/name) to the first target that writes it
	// (apply, pod_deletion_cost) and the first that only reads it;
	// selectors maps a selector's matcher set to its first target.
	workloads map[string]*workloadUse
	selectors map[string]selectorUse
	// pages maps each scrape URL's page (sourcekey.Probable) to the first
	// target that lists it.
	pages map[string]selectorUse
	// rolePrefix and parentPrefix are set while a P/D target's role is
	// validated (roles.go: key); reported holds what at said, so the
	// roles' shared keys are reported once.
	rolePrefix, parentPrefix string
	reported                 map[string]bool
	// files: check the files prometheus:'s HTTP client reads (Load).
	files bool
}

// bad reports whether key or one of its parents failed to decode.
func (v *validator) bad(key string) bool {
	for k := v.key(key); k != ""; {
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
	key = v.key(key)
	if v.bad(key) || v.reportedOnce(key, fmt.Sprintf(format, args...)) {
		return
	}
	v.d.errorf(v.posOf(key), key, format, args...)
}

// warn records a File.Warnings entry at key (or the nearest parent
// written), at most MaxErrors of them.
func (v *validator) warn(key, format string, args ...any) {
	if len(v.d.warnings) >= MaxErrors {
		return
	}
	e := Error{File: v.d.file, Key: v.key(key), Msg: fmt.Sprintf(format, args...)}
	if p := v.posOf(key); p != nil {
		e.Line, e.Column = p.Line, p.Column
	}
	v.d.warnings = append(v.d.warnings, e)
}

func (v *validator) posOf(key string) *token.Position {
	for k := v.key(key); ; {
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

func (v *validator) present(key string) bool { _, ok := v.d.pos[v.key(key)]; return ok }

func (v *validator) validate() {
	c := v.cfg
	if v.failed[""] {
		return // the document is not a mapping: nothing below it was read
	}
	if c.Interval < 0 || time.Duration(c.Interval) < MinInterval || time.Duration(c.Interval) > MaxInterval {
		v.at("pollingInterval", "must be 1s to 1h (the decision period; the HPA syncs every 15s), got %s", time.Duration(c.Interval))
	}
	if err := CheckListen(c.Listen); err != nil {
		v.at("listen", "%v", err)
	}
	v.prometheus()
	if len(c.Targets) == 0 {
		v.at("targets", "at least one target is required")
	}
	if c.Namespace != "" {
		v.namespace("namespace", c.Namespace)
		if !c.Kube() && len(c.Targets) > 0 {
			v.at("namespace", "is the default namespace of targets with a scaleTargetRef, and no target has one: add scaleTargetRef to a target, or drop namespace (a Prometheus target's namespace goes in its selector)")
		}
	}
	v.said = map[string]bool{}
	v.workloads = map[string]*workloadUse{}
	v.selectors = map[string]selectorUse{}
	v.pages = map[string]selectorUse{}
	names := map[string]int{}
	for i := range c.Targets {
		p := fmt.Sprintf("targets[%d]", i)
		t := &c.Targets[i]
		if prev, dup := names[t.Name]; dup && t.Name != "" {
			v.at(p+".name", "duplicate target name %q (also targets[%d])", t.Name, prev)
		}
		names[t.Name] = i
		if t.Roles != nil {
			v.pair(p, t)
			continue
		}
		v.target(p, t)
	}
}

// seriesLabels checks prometheus.series_labels: Prometheus label names
// other than the ones serve's own series carry itself, and a Prometheus
// to read them from.
func (v *validator) seriesLabels() {
	pc := &v.cfg.Prometheus
	if len(pc.SeriesLabels) == 0 {
		return
	}
	if pc.URL == "" {
		v.at("prometheus.series_labels", "match serve's own series in Prometheus (the rebuild at a restart, a tuned policy's revert), and there is no prometheus.url (embedded mode reads none back): add prometheus.url, or drop series_labels")
		return
	}
	names := make([]string, 0, len(pc.SeriesLabels))
	for n := range pc.SeriesLabels {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		key := "prometheus.series_labels." + n
		switch {
		case n == "target" || n == "role" || n == model.MetricNameLabel:
			v.at(key, "serve sets %s itself in its reads of its own series (the target's name, a pair's role, the metric); series_labels are the labels the scrape adds that tell this installation's series from another's (namespace, service, job, ...): drop %s", n, n)
		case !model.LabelName(n).IsValidLegacy():
			v.at(key, "%q is not a Prometheus label name ([a-zA-Z_][a-zA-Z0-9_]*): give the label as Prometheus shows it on infscale_desired_replicas, e.g. namespace", n)
		case pc.SeriesLabels[n] == "":
			// {namespace: } is null, read as "": the selector
			// namespace="" matches only series without the label.
			v.at(key, "no value: %s=\"\" matches only series without %s, so serve would read none of its own: give the value the scrape sets, e.g. %s: infscale, or drop %s", n, n, n, n)
		case n == "pod" || n == "instance":
			v.warn(key, "%s names one replica of serve: a restarted serve is a new pod and finds none of its series (the rebuild starts fresh); give the labels its replicas share, e.g. {namespace: infscale, service: infscale}", n)
		}
	}
}

func (v *validator) prometheus() {
	pc := &v.cfg.Prometheus
	if pc.URL != "" {
		u, err := httpurl.Parse(pc.URL)
		switch {
		case errors.Is(err, httpurl.ErrPort):
			v.at("prometheus.url", "%q: %v", sourcekey.Redact(pc.URL), err)
		case err != nil:
			v.at("prometheus.url", "must be an http:// or https:// URL with a host, got %q", sourcekey.Redact(pc.URL))
		case u.RawQuery != "" || u.Fragment != "" || u.User != nil:
			v.at("prometheus.url", "%q: no query, fragment or user:password (auth goes in basic_auth / authorization); the base URL, e.g. http://prometheus:9090", u.Redacted())
		case strings.HasSuffix(strings.TrimSuffix(u.Path, "/"), "/api/v1"):
			v.at("prometheus.url", "%q: the base URL without /api/v1 (the client adds /api/v1/query), e.g. http://prometheus:9090", pc.URL)
		}
	}
	if pc.Timeout <= 0 {
		v.at("prometheus.timeout", "must be positive, got %s", pc.Timeout)
	}
	// A read still waiting when the decision period ends is cut by it (its
	// error says so): a timeout at or past the period never fires, and a
	// source that hangs leaves the cycle no time to decide on the others.
	if iv := v.cfg.Interval; pc.Timeout > 0 && iv > 0 && pc.Timeout >= iv {
		const why = "a read still waiting at the period's end is cut by the period, not by the timeout, and a source that hangs holds the cycle's decisions until then"
		// In the file's form (3s300ms): Go's 3.3s is refused there.
		e := model.Duration((time.Duration(iv) * 2 / 3).Round(100 * time.Millisecond))
		// Without prometheus.url the key still bounds every read: the
		// scrapes. Say so, or the warning names a Prometheus the file has not.
		scrape := ""
		if pc.Embedded() {
			scrape = " (in embedded mode the scrape timeout)"
		}
		if v.d.given("prometheus.timeout") {
			v.warn("prometheus.timeout", "%s%s is not below pollingInterval %s: %s; set it below the interval, e.g. %s", pc.Timeout, scrape, iv, why, e)
		} else {
			v.warn("pollingInterval", "%s is not above prometheus.timeout (default %s)%s: %s; set prometheus.timeout below the interval, e.g. %s", iv, pc.Timeout, scrape, why, e)
		}
	}
	v.seriesLabels()
	if err := pc.HTTPClientConfig.Validate(); err != nil {
		v.at("prometheus", "%v", err)
		return
	}
	if pc.SigV4 != nil && pc.URL == "" {
		v.at("prometheus.sigv4", "signs the queries to prometheus.url, and there is none (embedded mode reads the pods' /metrics, unsigned): add prometheus.url (Amazon Managed Prometheus's workspace URL, https://aps-workspaces.<region>.amazonaws.com/workspaces/<id>), or drop sigv4")
		return
	}
	if pc.SigV4 != nil {
		// Prometheus's remote_write rule (validateAuthConfigs): one
		// Authorization header, so one of them.
		var auth []string
		for _, a := range []struct {
			key string
			set bool
		}{{"basic_auth", pc.BasicAuth != nil}, {"authorization", pc.Authorization != nil}, {"oauth2", pc.OAuth2 != nil}} {
			if a.set {
				auth = append(auth, a.key)
			}
		}
		if len(auth) > 0 {
			v.at("prometheus.sigv4", "at most one of basic_auth, authorization, oauth2 and sigv4 may be given (each sets the Authorization header), got sigv4 and %s: drop %s", strings.Join(auth, ", "), strings.Join(auth, ", "))
			return
		}
		if err := pc.SigV4.Validate(); err != nil {
			v.at("prometheus.sigv4", "%v", err)
			return
		}
	}
	if v.files {
		v.clientFiles()
	}
}

// MaxClientFileSize bounds a credential or TLS file of prometheus: (a CA
// bundle is some hundred kB).
const MaxClientFileSize = 16 << 20

// clientFiles checks, in Load, the files prometheus:'s HTTP client reads
// that exist: each must be a regular file that can be opened (a FIFO
// blocked serve, and its shutdown, at the first query; a directory failed
// every query while --check-config said valid), and the TLS files must
// load (Prometheus's client loads them when serve starts). A file that
// does not exist is a warning (File.Warnings), not an error:
// --check-config runs where the pod's Secrets are not mounted, and a
// credential file written after serve starts (a secrets agent) is read at
// the next query; a tls_config file is read when the client is made, so
// serve stops at start without it (the warning says which). Relative paths are
// relative to serve's working directory, as the client reads them.
func (v *validator) clientFiles() {
	hc := &v.cfg.Prometheus.HTTPClientConfig
	type file struct {
		key, path string
		// atStart: the client reads it when it is made (RoundTripper:
		// prometheus/common's TLS round tripper loads tls_config's CA,
		// certificate and key), so serve stops at start while it is
		// missing; the others are read at each request.
		atStart bool
	}
	var files []file
	add := func(key, path string) {
		if path != "" {
			files = append(files, file{"prometheus." + key, path, strings.HasPrefix(key, "tls_config.")})
		}
	}
	if a := hc.BasicAuth; a != nil {
		add("basic_auth.username_file", a.UsernameFile)
		add("basic_auth.password_file", a.PasswordFile)
	}
	if a := hc.Authorization; a != nil {
		// prometheus/common's Validate moves bearer_token_file here:
		// named as the user wrote it.
		key := "authorization.credentials_file"
		if v.present("prometheus.bearer_token_file") {
			key = "bearer_token_file"
		}
		add(key, a.CredentialsFile)
	}
	add("bearer_token_file", hc.BearerTokenFile)
	if o := hc.OAuth2; o != nil {
		add("oauth2.client_secret_file", o.ClientSecretFile)
		add("oauth2.tls_config.ca_file", o.TLSConfig.CAFile)
		add("oauth2.tls_config.cert_file", o.TLSConfig.CertFile)
		add("oauth2.tls_config.key_file", o.TLSConfig.KeyFile)
	}
	add("tls_config.ca_file", hc.TLSConfig.CAFile)
	add("tls_config.cert_file", hc.TLSConfig.CertFile)
	add("tls_config.key_file", hc.TLSConfig.KeyFile)
	ok := true
	for _, f := range files {
		fh, err := boundedfile.Open(f.path, MaxClientFileSize, "a credential or TLS file", "want a file (a Secret mounted as a volume is one)")
		switch {
		case errors.Is(err, fs.ErrNotExist):
			// Not mounted here (--check-config where the pod's
			// Secrets are not): loaded, and said, since serve started
			// so fails every query until the file is there, or, a TLS
			// file, does not start.
			if f.atStart {
				v.warn(f.key, "%s does not exist here: serve stops at start until it does (Prometheus's client loads the TLS files when it is made; a Secret not mounted, or a typo in the path)", f.path)
			} else {
				v.warn(f.key, "%s does not exist here: every query to Prometheus fails until it does (a Secret not mounted, or a typo in the path)", f.path)
			}
			ok = false
			continue
		case err != nil:
			var pe *fs.PathError
			if errors.As(err, &pe) {
				err = fmt.Errorf("%s: %w", f.path, pe.Err)
			}
			v.at(f.key, "%v", err)
		default:
			fh.Close()
			continue
		}
		ok = false
	}
	if !ok {
		return
	}
	if _, err := promconfig.NewTLSConfig(&hc.TLSConfig); err != nil {
		v.at("prometheus.tls_config", "%v", err)
	}
}

func (v *validator) target(p string, t *Target) {
	embedded := v.cfg.Prometheus.Embedded()
	switch {
	case t.Name == "":
		v.at(p+".name", "required: a unique name, used as the label target=\"<name>\"")
	case len(t.Name) > maxTargetNameLength || !nameRE.MatchString(t.Name):
		v.at(p+".name", "%q: allowed are letters, digits, '_', '.', '-' (at most %d)", t.Name, maxTargetNameLength)
	}
	if t.Server == modelserver.Unknown && !embedded {
		v.at(p+".server", "auto-detection works in embedded mode only; name the server (%s)", strings.Join(modelserver.Names(), ", "))
	}
	switch {
	case t.Selector != "":
		if _, err := promql.ParseSelector(t.Selector); err != nil {
			v.at(p+".selector", "not a PromQL label-matcher set such as '{namespace=\"llm\", pod=~\"chat-.*\"}': %s", promqlError(err))
		}
		v.sameSelector(p, t)
	case !embedded:
		v.at(p+".selector", "required with prometheus.url: the label matchers of the target's pods, e.g. '{namespace=\"llm\", pod=~\"chat-.*\"}'")
	}
	switch {
	case t.Replicas != "" && embedded && t.ScaleTargetRef == nil: // with it, workload says drop replicas
		// Never run, yet it turned off reading the current replicas as
		// the last desired (serve's SpecFollows): pods not answering were
		// no longer missing pods, and a scale-down went through.
		v.at(p+".replicas", "is a PromQL query, read only with prometheus.url; embedded mode never runs it: remove it (the current replicas are then infscale's last desired, the pods not answering counted missing), or give scaleTargetRef to read them from the workload")
	case t.Replicas != "":
		v.query(p+".replicas", t.Replicas)
	}
	v.workload(p, t)
	v.podDeletionCost(p, t)
	if embedded && len(t.Scrape.URLs) == 0 && t.Scrape.Pods == nil && !v.bad(p+".scrape") {
		pool := " (or name the InferencePool: inferencePoolRef: {name: chat})"
		if t.Role != 0 { // a pair takes no inferencePoolRef (pairRefused)
			pool = ""
		}
		v.at(p+".scrape", "required in embedded mode (no prometheus.url): the /metrics URLs of the replicas, or with scaleTargetRef the pods' port and path, e.g. {port: 8000, path: /metrics}%s", pool)
	}
	if t.Server == modelserver.EPP && t.Scrape.Pods != nil && t.InferencePoolRef == nil {
		v.at(p+".scrape", "server: epp reads the pool from its Endpoint Picker's page, not from the model-server pods: list the EPP's /metrics URL (scrape: [http://<pool>-epp.<namespace>:9090/metrics])")
	}
	if !embedded && (len(t.Scrape.URLs) > 0 || t.Scrape.Pods != nil) {
		// Both set, prometheus.url would win and these pages would be read
		// by nobody: say so rather than ignore them (as zero.held_scrape).
		v.at(p+".scrape", "is for embedded mode; with prometheus.url the target is read from Prometheus through its selector and nothing under scrape: is read: remove scrape: or prometheus.url")
	}
	dups := sourcekey.Duplicates(t.Scrape.URLs)
	for j, s := range t.Scrape.URLs {
		if _, err := httpurl.Parse(s); errors.Is(err, httpurl.ErrPort) {
			v.at(fmt.Sprintf("%s.scrape[%d]", p, j), "%q: %v", sourcekey.Redact(s), err)
		} else if err != nil {
			v.at(fmt.Sprintf("%s.scrape[%d]", p, j), "must be an http:// or https:// URL, got %q", sourcekey.Redact(s))
		} else if prev := dups[j]; prev >= 0 {
			// Read twice, one replica's requests would count twice.
			if again := t.Scrape.URLs[prev]; again == s {
				v.at(fmt.Sprintf("%s.scrape[%d]", p, j), "%q listed twice (also scrape[%d]); one URL per replica", sourcekey.Redact(s), prev)
			} else {
				v.at(fmt.Sprintf("%s.scrape[%d]", p, j), "%q is the same page as scrape[%d] %q (both %s once normalised as RFC 3986 section 6 does); one URL per replica", sourcekey.Redact(s), prev, sourcekey.Redact(again), sourcekey.Redact(sourcekey.Of(s)))
			}
		} else {
			v.noPath(fmt.Sprintf("%s.scrape[%d]", p, j), s)
			if k := sourcekey.Probable(s); k != sourcekey.Of(s) {
				// Loopback spellings of one port: refused only when
				// certain (a server on 127.0.0.1 alone and another on
				// [::1] alone are two pages), said otherwise.
				for i, o := range t.Scrape.URLs[:j] {
					if sourcekey.Probable(o) == k {
						v.warn(fmt.Sprintf("%s.scrape[%d]", p, j), "%q and scrape[%d] %q are both loopback at one port (%s): one page unless two servers listen apart on 127.0.0.1 and [::1]; read twice, one replica counts twice", sourcekey.Redact(s), i, sourcekey.Redact(o), sourcekey.Redact(k))
						break
					}
				}
			}
			v.samePage(p, j, t)
		}
	}
	for j := range t.Metrics {
		v.metric(fmt.Sprintf("%s.metrics[%d]", p, j), &t.Metrics[j])
	}
	v.replica(p, t)
	v.tune(p, t)
	if t.Max == nil && !v.bad(p+".maxReplicaCount") {
		v.at(p+".maxReplicaCount", "required: the most replicas the target may run (>= 1)")
	}
	switch {
	case t.Zero != nil:
		v.zero(p, t)
	case *t.Min == 0 && !v.bad(p+".minReplicaCount") && t.Role != 0: // a pair refuses zero: (pairRefused)
		v.at(p+".minReplicaCount", "0: a P/D pool runs at least 1 replica (zero: is refused on a pair: the pair has no held count to wake a pool at zero); use 1 or more")
	case *t.Min == 0 && !v.bad(p+".minReplicaCount") && t.Server == modelserver.EPP:
		v.at(p+".minReplicaCount", "0 needs a zero: block naming what holds the first request: with server: epp, zero: {flow_control: true} (the EPP's flow-control queue; its flowControl feature gate on); otherwise use 1 or more")
	case *t.Min == 0 && !v.bad(p+".minReplicaCount"):
		v.at(p+".minReplicaCount", "0 needs a zero: block naming what holds the first request (held:); otherwise use 1 or more")
	}
	if t.Hold != nil && !v.present(p+".hold.break_even") && !v.bad(p+".hold") {
		v.at(p+".hold", "break_even is required: what releasing a replica that is wanted again costs, in one replica's time, e.g. 182s (two cold starts of 91 s)")
		v.said[p+".hold.break_even"] = true
	}
	v.policy(p, t)
}

// policy checks the target's policy with recommend.Policy.Validate, the one
// owner of the policy rules (metrics and targets, bounds, behavior,
// lookahead, zero, schedule), and reports each problem at its key. A key
// that failed to decode is not reported again, and a bound that failed
// (or is absent) is stood in for (standIn) so that no rule reads a value
// the user did not write.
func (v *validator) policy(p string, t *Target) {
	pol := t.policy()
	standIn(&pol, t, v.bad(p+".minReplicaCount"), v.bad(p+".maxReplicaCount"))
	var fes recommend.FieldErrors
	if err := pol.Validate(); !errors.As(err, &fes) {
		return
	}
	for _, fe := range fes {
		if key := configKey(p, fe.Path); !v.said[key] {
			msg := fe.Msg
			if pos := v.posOf(configKey(p, fe.Also)); fe.Also != "" && pos != nil {
				msg = fe.MsgAt(fmt.Sprintf("%s at %d:%d", fe.Also, pos.Line, pos.Column))
			}
			v.at(key, "%s", msg)
		}
	}
}

// metric checks what the policy does not hold of one metrics[] entry: how
// its target was written, its quantile and window (how the signal is
// measured) and its query.
func (v *validator) metric(p string, m *Metric) {
	if m.Type == 0 {
		return // recommend's rule: required
	}
	if _, err := m.Target.For(m.Type); err != nil {
		v.at(p+".target", "%v", err)
		v.said[p+".target"] = true
	} else if m.Type.Seconds() && m.Target.Set {
		if err := quantity.CheckBareSeconds(m.Target.Value, m.Target.Duration); err != nil {
			v.at(p+".target", "%v", err)
			v.said[p+".target"] = true
		}
	}
	if m.Type.Seconds() && !(m.Quantile > 0 && m.Quantile < 1) { // NaN too
		v.at(p+".quantile", "must be in (0, 1), e.g. 0.95, got %v", m.Quantile)
	}
	if !m.Type.Seconds() && v.present(p+".quantile") {
		v.at(p+".quantile", "applies to ttft and queuewait only")
	}
	if !m.Type.Seconds() && v.present(p+".window") {
		// It was accepted and ignored: cpu uses pkg/promql's 2m rate window.
		v.at(p+".window", "applies to ttft and queuewait only (cpu uses a fixed 2m rate window, demand 1m)")
	} else if m.Window < 0 || (v.present(p+".window") && time.Duration(m.Window) < time.Minute) {
		v.at(p+".window", "must be at least 1m (four scrape intervals of 15s), got %s", m.Window)
	} else if time.Duration(m.Window) > MaxWindow {
		v.at(p+".window", "must be at most %s (a quantile over a longer window answers a load change long after it could be scaled on; embedded mode keeps every scrape's histogram within it), got %s", model.Duration(MaxWindow), m.Window)
	}
	if m.Query != "" {
		v.query(p+".query", m.Query)
		if m.Type == recommend.SignalQueue {
			v.at(p+".query", "queue is running + waiting: override those (a running or waiting metric's query), not queue")
		}
		if v.cfg.Prometheus.Embedded() {
			v.at(p+".query", "query overrides need prometheus.url (embedded mode reads pages, not PromQL)")
		}
	}
	if m.Type == recommend.SignalCPU && v.cfg.Prometheus.Embedded() {
		v.at(p+".type", "cpu needs prometheus.url (the CPU request comes from kube-state-metrics)")
	}
	if m.Type == recommend.SignalDemand && m.Query != "" {
		v.at(p+".query", "demand reads three rates (requests, prompt and generation tokens): it has no single query to override")
	}
}

// replica checks the replica block and sets its capacity; a demand metric
// requires it (its capacity is the demand's denominator).
func (v *validator) replica(p string, t *Target) {
	r := t.Replica
	if r == nil {
		for j, m := range t.Metrics {
			if m.Type == recommend.SignalDemand {
				v.at(fmt.Sprintf("%s.metrics[%d].type", p, j), "demand needs the target's replica model: add replica: {gpu: h100-sxm, model: llama-3-8b} (infscale gpu --list shows the names)")
			}
		}
		return
	}
	p += ".replica"
	c := replica.DefaultConfig()
	var err error
	ok := true
	if c.GPU, err = replica.LookupGPU(r.GPU); err != nil {
		v.at(p+".gpu", "%v", err)
		ok = false
	}
	switch {
	case r.ModelConfig != "" && r.Model != "":
		v.at(p+".model_config", "give model or model_config, not both")
		ok = false
	case r.ModelConfig != "":
		if c.Model, err = replica.LoadHFConfig(r.ModelConfig); err != nil {
			v.at(p+".model_config", "%v", missingFile(r.ModelConfig, err, "the model's Hugging Face config.json"))
			ok = false
		} else {
			r.modelConfigDigest = c.Model.Digest()
		}
	default:
		if c.Model, err = replica.LookupModel(r.Model); err != nil {
			v.at(p+".model", "%v", err)
			ok = false
		}
	}
	if r.TP < 0 || (v.present(p+".tp") && r.TP < 1) {
		v.at(p+".tp", "must be >= 1 (the tensor-parallel degree), got %d", r.TP)
		ok = false
	} else if r.TP > 0 {
		c.TP = r.TP
	}
	if !ok {
		return
	}
	if r.Calibration != "" {
		cal, err := replica.LoadCalibration(r.Calibration)
		if err == nil {
			r.calibrationDigest = cal.Digest()
			c, err = cal.Apply(c)
		}
		if mm := (*replica.MismatchError)(nil); errors.As(err, &mm) {
			// Said in the file's keys (the error's own text names the CLI flags).
			f, rp := mm.Fitted, mm.Replica
			model := "model: " + f.Model
			if m, err := replica.LookupModel(f.Model); err == nil {
				model = "model: " + m.Name
			} else { // fitted with --model-config: the catalog has no such model
				model = "model_config: the config.json of " + f.Model
			}
			v.at(p+".calibration", "%s was fitted for %s on %d x %s, not this replica's %s on %d x %s: set replica: {gpu: %s, %s, tp: %d}, or give a calibration fitted for this replica",
				r.Calibration, f.Model, f.TP, f.GPU, rp.Model, rp.TP, rp.GPU, f.GPU, model, f.TP)
			return
		}
		if err != nil {
			v.at(p+".calibration", "%v", missingFile(r.Calibration, err, "a file infscale load --calibrate or backtest --calibrate writes"))
			return
		}
	}
	m, err := replica.New(c)
	if err != nil {
		v.at(p, "%v", err)
		return
	}
	r.capacity = recommend.CapacityFrom(m)
}

func (v *validator) zero(p string, t *Target) {
	if t.Zero.FlowControl {
		switch {
		case t.Server != modelserver.EPP:
			v.at(p+".zero.flow_control", "reads the held count from the llm-d EPP's flow-control queue: it needs server: epp (the target read from its EPP); for another server name the holder with held: or held_scrape:")
		case t.Zero.Held != "" || t.Zero.HeldScrape != "":
			v.at(p+".zero", "flow_control (the EPP's queue), held and held_scrape are exclusive: name one holder")
		}
		return
	}
	if t.Zero.HeldScrape != "" {
		_, err := httpurl.Parse(t.Zero.HeldScrape)
		switch {
		case errors.Is(err, httpurl.ErrPort):
			v.at(p+".zero.held_scrape", "%q: %v", sourcekey.Redact(t.Zero.HeldScrape), err)
		case err != nil:
			v.at(p+".zero.held_scrape", "must be an http:// or https:// URL (the activator's /metrics), got %q", sourcekey.Redact(t.Zero.HeldScrape))
		case t.Zero.Held != "":
			v.at(p+".zero", "held (PromQL, with prometheus.url) and held_scrape (embedded mode) are exclusive")
		case !v.cfg.Prometheus.Embedded():
			v.at(p+".zero.held_scrape", "is for embedded mode; with prometheus.url use held: 'sum(max without (prometheus, prometheus_replica, replica) (infscale_activator_held_requests{...}))'")
		default:
			v.noPath(p+".zero.held_scrape", t.Zero.HeldScrape)
		}
	} else if t.Zero.Held == "" {
		v.at(p+".zero.held", "required: a PromQL expression for the requests held in front of the servers (e.g. sum(max without (prometheus, prometheus_replica, replica) (infscale_activator_held_requests{service=\"activator-chat\"}))), or in embedded mode held_scrape: the activator's /metrics URL, or with server: epp flow_control: true")
	} else {
		v.query(p+".zero.held", t.Zero.Held)
		if v.cfg.Prometheus.Embedded() {
			v.at(p+".zero", "scale to zero needs prometheus.url (held is a PromQL query)")
		}
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

// workload checks scaleTargetRef, namespace, apply and the pod form of
// scrape: what needs the Kubernetes API.
func (v *validator) workload(p string, t *Target) {
	ref := t.ScaleTargetRef
	if ref == nil {
		for _, k := range []string{"namespace", "apply"} {
			if v.present(p + "." + k) {
				v.at(p+"."+k, "applies to a target with scaleTargetRef (the workload: {apiVersion: apps/v1, kind: Deployment, name: chat})")
			}
		}
		if t.InferencePoolRef != nil && !v.cfg.Prometheus.Embedded() {
			// Not "add scaleTargetRef": with it, Prometheus mode refuses the ref.
			v.at(p+".inferencePoolRef", poolPrometheusMode)
		} else if t.InferencePoolRef != nil {
			v.at(p+".inferencePoolRef", "needs scaleTargetRef: the workload behind the pool, whose scale subresource gives the current replicas (an InferencePool has none), e.g. {apiVersion: apps/v1, kind: Deployment, name: chat}")
		} else if t.Scrape.Pods != nil {
			v.at(p+".scrape", "the {port, path} form scrapes the Ready pods of scaleTargetRef: add scaleTargetRef, or list the /metrics URLs")
		}
		return
	}
	v.pool(p, t)
	r := p + ".scaleTargetRef"
	if ref.APIVersion == "" {
		v.at(r+".apiVersion", "required: the workload's group/version, e.g. apps/v1 (argoproj.io/v1alpha1 for a Rollout)")
	} else if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Version == "" {
		v.at(r+".apiVersion", "%q: want group/version (apps/v1) or v1 for the core group", ref.APIVersion)
	} else if ref.Kind == "" {
		if field, err := CheckScaleTargetRef(ref.APIVersion, "Deployment"); err != nil && field == "apiVersion" {
			v.at(r+".apiVersion", "%v", err)
		}
	}
	if ref.Kind == "" {
		v.at(r+".kind", "required: the workload's kind, e.g. Deployment, StatefulSet, Rollout, LeaderWorkerSet")
	} else if msgs := validation.IsDNS1035Label(strings.ToLower(ref.Kind)); len(msgs) > 0 {
		v.at(r+".kind", "%q: a kind is a CamelCase name such as Deployment", ref.Kind)
	} else if gv, err := schema.ParseGroupVersion(ref.APIVersion); err == nil && gv.Version != "" {
		if field, err := CheckScaleTargetRef(ref.APIVersion, ref.Kind); err != nil {
			v.at(r+"."+field, "%v", err)
		}
	}
	if ref.Name == "" {
		v.at(r+".name", "required: the workload's name")
	} else if msgs := validation.IsDNS1123Subdomain(ref.Name); len(msgs) > 0 {
		v.at(r+".name", "%q: not a Kubernetes object name: %s", ref.Name, strings.Join(msgs, "; "))
	}
	if t.Namespace != "" && v.present(p+".namespace") {
		v.namespace(p+".namespace", t.Namespace)
	}
	if t.Replicas != "" {
		v.at(p+".replicas", "scaleTargetRef gives the current replicas (the scale subresource's spec.replicas); drop replicas")
	}
	if s := t.Scrape.Pods; s != nil {
		switch {
		case !v.present(p + ".scrape.port"): // left out: the pod's one port (or the pool's)
		case s.Port.Type == intstr.Int && (s.Port.IntVal < 1 || s.Port.IntVal > 65535):
			v.at(p+".scrape.port", "%d: a port is 1..65535 (or a container port's name)", s.Port.IntVal)
		case s.Port.Type == intstr.String && s.Port.StrVal != "":
			if msgs := validation.IsValidPortName(s.Port.StrVal); len(msgs) > 0 {
				v.at(p+".scrape.port", "%q: not a container port name: %s", s.Port.StrVal, strings.Join(msgs, "; "))
			}
		}
		if !strings.HasPrefix(s.Path, "/") {
			v.at(p+".scrape.path", "%q: a path starts with /, e.g. /metrics", s.Path)
		}
	}
	if key := workloadKey(t); key != "" {
		v.sameWorkload(p, t, key)
	}
}

// workloadKey names t's scaleTargetRef workload (namespace/group/kind/name;
// "" without one): two targets with one key act on one workload.
func workloadKey(t *Target) string {
	ref := t.ScaleTargetRef
	if ref == nil || ref.Kind == "" || ref.Name == "" {
		return ""
	}
	gv, _ := schema.ParseGroupVersion(ref.APIVersion)
	return t.Namespace + "/" + gv.Group + "/" + ref.Kind + "/" + ref.Name
}

// selectorUse is the first target with a selector's matcher set: its
// selector's key and its workload (workloadKey).
type selectorUse struct{ key, workload string }

// workloadUse is the first target that writes a workload and the first
// that only reads it: each a target key (targets[i] or a role's) and the
// key that says so (the writing key, or scaleTargetRef).
type workloadUse struct {
	writer, writerKey, reader, readerKey string
}

// sameWorkload checks two targets acting on one workload: two writers
// (apply or pod_deletion_cost) undo each other's changes every cycle and
// are refused; a second target that only reads the workload exports a
// decision nothing here applies, legitimate (a shadow policy), and is
// warned of. Both name the other target and its position. A pair's two
// roles on one workload are pair's to refuse.
func (v *validator) sameWorkload(p string, t *Target, key string) {
	ref := t.ScaleTargetRef
	what := ref.Kind + " " + ref.Name
	if t.Namespace != "" {
		what = ref.Kind + " " + t.Namespace + "/" + ref.Name
	}
	u := v.workloads[key]
	if u == nil {
		u = &workloadUse{}
		v.workloads[key] = u
	}
	writeKey := ""
	switch {
	case t.Apply:
		writeKey = v.key(p + ".apply")
	case t.PodDeletionCost:
		writeKey = v.key(p + ".pod_deletion_cost")
	}
	self := v.index(p)
	other := func(tp, k string) (string, bool) {
		i, _ := targetIndex(tp)
		if i == self {
			return "", false // the other role of this pair
		}
		return fmt.Sprintf("targets[%d] %q (%s)", i, v.cfg.Targets[i].Name, v.where(k)), true
	}
	switch {
	case writeKey != "" && u.writer != "":
		if o, ok := other(u.writer, u.writerKey); ok {
			v.at(writeKey, "%s writes the same workload, %s: two writers (apply, pod_deletion_cost) undo each other's changes every cycle; keep them on one target (the other still exports its decision)", o, what)
		}
	case writeKey != "":
		u.writer, u.writerKey = p, writeKey
		if u.reader != "" {
			if o, ok := other(u.reader, u.readerKey); ok {
				v.warn(p+".scaleTargetRef", "%s names the same workload, %s, and does not write it: its decision is exported only (infscale_desired_replicas{target=%q}); scale the workload on one target only", o, what, v.cfg.Targets[v.index(u.reader)].Name)
			}
		}
	default:
		k := v.key(p + ".scaleTargetRef")
		if u.writer != "" {
			if o, ok := other(u.writer, u.writerKey); ok {
				v.warn(k, "names the same workload as %s, %s, which writes it: this target's decision is exported only (infscale_desired_replicas{target=%q}); do not scale the workload on it too (a ScaledObject, an HPA)", o, what, t.Name)
			}
		} else if u.reader != "" {
			if o, ok := other(u.reader, u.readerKey); ok {
				v.warn(k, "names the same workload as %s, %s: both decisions are exported only; scale the workload on one of them (one ScaledObject)", o, what)
			}
		}
		if u.reader == "" {
			u.reader, u.readerKey = p, k
		}
	}
}

// sameSelector warns of a target whose selector holds the same matchers
// (in any order) as an earlier target's: both decide on the same pods and
// export a decision each; legitimate for comparing policies, but only one
// may scale the workload (nothing in this file applies a Prometheus
// target's decision without scaleTargetRef: sameWorkload refuses two writers).
// Two targets on one workload are sameWorkload's to name, not warned twice.
func (v *validator) sameSelector(p string, t *Target) {
	ms, err := promql.ParseSelector(t.Selector)
	if err != nil || t.Selector == "" {
		return
	}
	set := strings.Join(promql.MatcherSet(ms), ",")
	i, prev, again := v.repeated(v.selectors, set, v.key(p+".selector"), p, t)
	if !again {
		return
	}
	v.warn(p+".selector", "selects the same series as targets[%d] %q (%s): both decide on the same pods and each exports its own infscale_desired_replicas; scale the workload on one of them only (one ScaledObject)", i, v.cfg.Targets[i].Name, v.where(prev))
}

// repeated records target p's (t's) use of k (a selector's matcher set, a
// page) at key in uses, and returns the earlier target's index and key
// when another target used k first: not a pair's other role (pair
// refuses them), nor on the same workload (sameWorkload names that one).
func (v *validator) repeated(uses map[string]selectorUse, k, key, p string, t *Target) (int, string, bool) {
	prev, seen := uses[k]
	if !seen {
		uses[k] = selectorUse{key, workloadKey(t)}
		return 0, "", false
	}
	i, _ := targetIndex(prev.key)
	if i == v.index(p) {
		return 0, "", false
	}
	if w := workloadKey(t); w != "" && w == prev.workload {
		return 0, "", false
	}
	return i, prev.key, true
}

// noPath warns of the /metrics URL s at key when it has no path ("" or
// "/", no query): serve fetches a URL as written, adding no metrics_path
// as a Prometheus target's spelling (http://chat-epp:9090) would expect,
// and model servers and llm-d's EPP answer /metrics only (404). A warning,
// not an error: a proxy may serve a page at "/".
func (v *validator) noPath(key, s string) {
	u, err := neturl.Parse(s)
	if err != nil || u.Path != "" && u.Path != "/" || u.RawQuery != "" {
		return
	}
	fix := *u
	fix.Path, fix.RawPath = "/metrics", ""
	v.warn(key, "%q has no path, and serve fetches it as written (no metrics_path is added): model servers and llm-d's EPP serve their page at /metrics only (404 here); write %q", sourcekey.Redact(s), sourcekey.Redact(fix.String()))
}

// samePage warns of a target whose scrape[j] names the same page
// (sourcekey.Probable: after RFC 3986 normalisation, loopback hosts of one
// port as one) as an earlier target's
// scrape URL, as sameSelector warns of two targets on one selector: both
// read the same pods (an EPP's page: the same pool) and each exports, and
// may scale on, its own decision, so one pool is scaled twice. Two
// targets on one workload are sameWorkload's to name, not warned twice; a
// pair's two roles are pair's to refuse.
func (v *validator) samePage(p string, j int, t *Target) {
	u := t.Scrape.URLs[j]
	k := v.key(fmt.Sprintf("%s.scrape[%d]", p, j))
	page := sourcekey.Probable(u)
	i, prev, again := v.repeated(v.pages, page, k, p, t)
	if !again {
		return
	}
	v.warn(k, "%q reads the same page as targets[%d] %q (%s; both %s): both decide on the same pods (an EPP's page: the same pool) and each exports its own infscale_desired_replicas; scale the workload on one of them only (one ScaledObject)", sourcekey.Redact(u), i, v.cfg.Targets[i].Name, v.where(prev), sourcekey.Redact(page))
}

// where is file:line:col of key (or its nearest parent written).
func (v *validator) where(key string) string {
	p := v.posOf(key)
	if p == nil {
		return v.d.file
	}
	return fmt.Sprintf("%s:%d:%d", v.d.file, p.Line, p.Column)
}

// poolPrometheusMode refuses inferencePoolRef beside prometheus.url.
const poolPrometheusMode = "is embedded mode's (infscale finds the pool's pods, or with server: epp its Endpoint Picker's, and scrapes them); with prometheus.url the signals come from selector: (Prometheus series carry the scrape target's labels, not the pool's matchLabels; for server: epp the EPP's, e.g. '{namespace=\"llm\", service=\"<endpointPickerRef name>\"}'): remove inferencePoolRef or prometheus.url"

// pool checks inferencePoolRef (with a scaleTargetRef): a name, embedded
// mode, and no scrape URLs beside it.
func (v *validator) pool(p string, t *Target) {
	pr := t.InferencePoolRef
	if pr == nil {
		return
	}
	key := p + ".inferencePoolRef"
	if pr.Name == "" {
		v.at(key+".name", "required: the InferencePool's name (in the target's namespace)")
	} else if msgs := validation.IsDNS1123Subdomain(pr.Name); len(msgs) > 0 {
		v.at(key+".name", "%q: not a Kubernetes object name: %s", pr.Name, strings.Join(msgs, "; "))
	}
	if !v.cfg.Prometheus.Embedded() {
		v.at(key, poolPrometheusMode)
	}
	if len(t.Scrape.URLs) > 0 {
		v.at(p+".scrape", "with inferencePoolRef the pool gives the pages (its pods, or with server: epp its EPP's): drop the URLs, or give {port, path}")
	}
}

// index is the i of a "targets[i]" key.
func (v *validator) index(p string) int {
	i, _ := targetIndex(p)
	return i
}

// targetIndex is the i of a key under "targets[i]"; ok is false for a key
// that is no target's.
func targetIndex(key string) (i int, ok bool) {
	_, err := fmt.Sscanf(key, "targets[%d]", &i)
	return i, err == nil
}

// namespace checks a namespace name (a DNS-1123 label).
func (v *validator) namespace(key, ns string) {
	if msgs := validation.IsDNS1123Label(ns); len(msgs) > 0 {
		v.at(key, "%q: a namespace name is lowercase letters, digits and '-' (a DNS-1123 label, at most 63 characters)", ns)
	}
}

// missingFile words err, reading the file path a replica key names, when
// the file does not exist: where a relative path was looked for (serve's
// working directory, not the config file's) and what the file is, instead
// of Go's "open none.json: no such file or directory". Other errors as
// they are.
func missingFile(path string, err error, what string) error {
	if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	where := ""
	if !filepath.IsAbs(path) {
		if wd, werr := os.Getwd(); werr == nil {
			where = " in the working directory " + wd + " (a relative path is read from there, not from the config file's directory)"
		}
	}
	return fmt.Errorf("%s: no such file%s; want %s", path, where, what)
}
