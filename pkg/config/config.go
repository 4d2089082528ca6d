package config

import (
	"fmt"
	"net/http"
	"time"

	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/common/model"
	"github.com/prometheus/sigv4"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/infscale/infscale/pkg/modelserver"
	"github.com/infscale/infscale/pkg/recommend"
)

// Defaults of the keys that have one (docs/config.md lists the same values;
// a test checks that the documented defaults equal these).
const (
	DefaultInterval     = 15 * time.Second
	DefaultTimeout      = 10 * time.Second
	DefaultListen       = "0.0.0.0:9105"
	DefaultQuantile     = 0.95
	DefaultWindow       = 3 * time.Minute
	DefaultMin          = 1
	DefaultZeroCooldown = 300 * time.Second
	DefaultScheduleTZ   = "UTC"
	DefaultScrapePath   = "/metrics"
	maxTargetNameLength = 128
)

// MaxWindow bounds a ttft or queuewait metric's window (at least 1m): a
// quantile over more than an hour answers a load change long after a
// scaler could act on it, embedded mode keeps each replica's histogram of
// every scrape within the window (window: 1000d grew without bound for
// years), and the runaway guard's settle is at least the window.
const MaxWindow = time.Hour

// MinInterval and MaxInterval bound interval, the decision period (the
// HPA syncs every 15 s): below 1 s a cycle cannot read its targets; beyond
// 1 h the stabilization windows (5 min by default) and rate-limit periods
// (at most 30 min) hold one sample at most, and a typo such as 100000h
// would leave the targets undecided for years.
const (
	MinInterval = time.Second
	MaxInterval = time.Hour
)

// File is one `infscale serve` configuration file, decoded and validated.
type File struct {
	// Prometheus is where signals are read from; nil URL means embedded mode.
	Prometheus Prometheus `yaml:"prometheus"`
	// Interval is the decision period, KEDA's pollingInterval (default
	// 15s; the old key interval is read with a deprecation warning).
	Interval model.Duration `yaml:"pollingInterval"`
	// Listen is the HTTP address of /metrics, /healthz, /readyz and
	// /debug/decisions (default 0.0.0.0:9105); --listen overrides it.
	Listen string `yaml:"listen"`
	// Namespace is the default namespace of the targets that name a
	// scaleTargetRef without their own namespace; empty: the client's
	// namespace (the pod's own in a cluster, else the kubeconfig context's,
	// else "default"), as kubectl picks it.
	Namespace string `yaml:"namespace"`
	// Targets are the workloads to decide for, at least one.
	Targets []Target `yaml:"targets"`

	// Path is the file this was loaded from ("" for in-memory configs).
	Path string `yaml:"-"`
	// Deprecations are the keys written under an old name (RenamedKeys),
	// each at its file:line:col, naming the key that replaces it: the file
	// loads, and the caller prints them as warnings.
	Deprecations []Error `yaml:"-"`
	// Warnings are values that load but may not do what is meant (a tune:
	// block's slo_ttft inside a bucket of the server's TTFT histogram),
	// each at its file:line:col: the caller prints them as warnings.
	Warnings []Error `yaml:"-"`
}

// Prometheus is the signal source: a Prometheus (or compatible) HTTP API.
// Auth and TLS keys are Prometheus's own HTTP client config, inline.
type Prometheus struct {
	// URL is the base URL of the Prometheus HTTP API, e.g.
	// http://prometheus:9090. Empty means embedded mode: every target is read
	// by scraping its `scrape:` URLs directly.
	URL string `yaml:"url"`
	// Timeout bounds every query (default 10s).
	Timeout model.Duration `yaml:"timeout"`
	// HTTPClientConfig is basic_auth, authorization, oauth2, tls_config,
	// proxy_url, http_headers, ... exactly as in prometheus.yml.
	promconfig.HTTPClientConfig `yaml:",inline"`
	// SigV4 signs every query with AWS Signature Version 4, as Amazon
	// Managed Service for Prometheus requires: remote_write's sigv4 block
	// of prometheus.yml, key for key. Without access_key the credentials
	// come from AWS's default chain (IRSA's web identity token, the
	// environment, a profile). Refused beside basic_auth, authorization
	// and oauth2. nil: requests are not signed.
	SigV4 *sigv4.SigV4Config `yaml:"sigv4,omitempty"`
	// SeriesLabels are the labels Prometheus's scrape gives serve's own
	// series, e.g. {namespace: infscale, service: infscale} from
	// prometheus-operator's ServiceMonitor: serve's reads of its own
	// series (the state rebuilt at a restart without --state-dir, a tuned
	// policy's revert) match them beside target, so that another
	// installation's target of the same name stays out. Label names as
	// Prometheus spells them ([a-zA-Z_][a-zA-Z0-9_]*), not target, role or
	// __name__ (serve sets those); needs URL. nil: target alone.
	SeriesLabels map[string]string `yaml:"series_labels,omitempty"`
}

// RoundTripper is the transport of every query to the Prometheus API:
// Prometheus's HTTP client config, wrapped in SigV4 signing when sigv4 is
// given, as Prometheus wires its remote write client. It errors on a bad
// TLS config, or with sigv4 when no AWS credentials or region are found.
func (p Prometheus) RoundTripper() (http.RoundTripper, error) {
	rt, err := promconfig.NewRoundTripperFromConfig(p.HTTPClientConfig, "infscale")
	if err != nil {
		return nil, err
	}
	if p.SigV4 != nil {
		rt, err = sigv4.NewSigV4RoundTripper(p.SigV4, rt)
		if err != nil {
			return nil, fmt.Errorf("sigv4: %w", err)
		}
	}
	return rt, nil
}

// Embedded reports whether no Prometheus is configured and targets are
// scraped directly.
func (p Prometheus) Embedded() bool { return p.URL == "" }

// Target is one workload (one Deployment) to recommend a replica count for.
type Target struct {
	// Name becomes the label target="<name>"; unique; [a-zA-Z0-9_.-]+.
	Name string `yaml:"name"`
	// Server is the model-server profile (modelserver.ParseServer: vllm,
	// sglang, llamacpp, ...; auto detects it, embedded mode only); default
	// vllm.
	Server modelserver.Server `yaml:"server"`
	// Selector is a PromQL label-matcher set, e.g. '{namespace="llm",
	// pod=~"chat-.*"}', injected into every query of this target.
	Selector string `yaml:"selector"`
	// Replicas is a PromQL expression giving the current replicas (e.g.
	// kube_deployment_spec_replicas{...}); optional: without it the current
	// count is the number of replicas reporting.
	Replicas string `yaml:"replicas"`
	// ScaleTargetRef names the target's workload as an HPA's does
	// (apiVersion, kind, name; any resource with a scale subresource:
	// Deployment, StatefulSet, an Argo Rollout, a LeaderWorkerSet). With
	// it the current replicas are the scale subresource's spec.replicas,
	// its status.selector finds the pods, and Apply may write the scale.
	// Nil: no Kubernetes access for this target.
	ScaleTargetRef *autoscalingv2.CrossVersionObjectReference `yaml:"scaleTargetRef"`
	// InferencePoolRef names the llm-d / Gateway API Inference Extension
	// InferencePool (inference.networking.k8s.io/v1) that routes to the
	// workload, in the target's namespace (a pool selects pods of its own
	// namespace only). Embedded mode only, with ScaleTargetRef (a pool has
	// no scale subresource): the pages read are those of the pool's Ready
	// pods of the workload (server: vllm, ...; at scrape.port, else the
	// pool's one targetPort), or with server: epp those of the pods behind
	// its endpointPickerRef Service (at scrape.port, else their container
	// port named metrics). Nil: no pool.
	InferencePoolRef *PoolRef `yaml:"inferencePoolRef"`
	// Namespace is the workload's namespace; Load sets the file's
	// namespace when it is left out (still "": the client's default). Only
	// with ScaleTargetRef.
	Namespace string `yaml:"namespace"`
	// Apply writes the decided replicas to the workload's scale
	// subresource (spec.replicas) when they differ from it; requires
	// ScaleTargetRef, refused at run time while an HPA scales the workload.
	Apply bool `yaml:"apply"`
	// PodDeletionCost sets controller.kubernetes.io/pod-deletion-cost on
	// the workload's pods from their outstanding requests (running +
	// waiting) before a scale-down, so that its ReplicaSet removes the
	// idlest first (docs/ha.md, "Pod deletion cost"); requires
	// ScaleTargetRef of a ReplicaSet-managed kind (not a StatefulSet).
	PodDeletionCost bool `yaml:"pod_deletion_cost"`
	// Scrape is what embedded mode reads: a list of the replicas' /metrics
	// URLs, or (with ScaleTargetRef) the port and path to scrape on every
	// Ready pod of the workload. Beside prometheus.url it is refused
	// (nobody would read it).
	Scrape Scrape `yaml:"scrape"`
	// Metrics are the signals to scale on (the largest recommendation wins).
	Metrics []Metric `yaml:"metrics"`
	// Min and Max bound the desired replicas, KEDA's minReplicaCount
	// (default 1) and maxReplicaCount (required).
	Min *int `yaml:"minReplicaCount"`
	Max *int `yaml:"maxReplicaCount"`
	// Behavior is autoscaling/v2 HorizontalPodAutoscalerBehavior, verbatim.
	Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `yaml:"behavior"`
	// Lookahead projects demand over this horizon (the cold start); 0 = off.
	Lookahead model.Duration `yaml:"lookahead"`
	// RampBound is how many of its Poisson standard errors the demand
	// metric adds to an arrival trend that counts before projecting it
	// (recommend.Policy.RampBound; >= 0, default 0: the fitted slope).
	// simulate's recommended sets recommend.RampBoundFor(cold start, 60 s):
	// 0.26 for a 91 s cold start.
	RampBound float64 `yaml:"ramp_bound"`
	// Hold is infscale's cost-aware scale-down (recommend.Hold); nil: off.
	Hold *Hold `yaml:"hold"`
	// Zero enables scale to zero behind a request holder; requires
	// minReplicaCount: 0.
	Zero *Zero `yaml:"zero"`
	// Schedule raises the floor on a timetable.
	Schedule []Window `yaml:"schedule"`
	// Guard tunes or turns off the runaway guard (recommend.Guard); absent:
	// on, with settle the ttft or queuewait window + 30 s (90 s without), drain 30 s.
	Guard *Guard `yaml:"guard"`
	// Replica is the replica model (GPU, model, tensor parallelism, an
	// optional calibration) whose capacity the demand metric divides by;
	// required with a demand metric.
	Replica *Replica `yaml:"replica"`
	// Tune, when set, re-tunes the target's policy on its own history
	// in the background (tune.go).
	Tune *Tune `yaml:"tune"`
	// Roles makes the target a prefill/decode (P/D) pair (roles.go): two
	// pools, each read, bounded and decided on its own keys, sharing the
	// replica model and the rest. Nil: one pool.
	Roles *Roles `yaml:"roles"`

	// Role is set on the targets RoleTarget derives (prefill or decode),
	// 0 on a configured target.
	Role recommend.Role `yaml:"-"`
}

// PoolRef names an InferencePool in the target's namespace.
type PoolRef struct {
	// Name is the InferencePool's name.
	Name string `yaml:"name"`
}

// DefaultEPPMetricsPort is the container port name an Endpoint Picker's
// /metrics is read on when a pool target with server: epp names no
// scrape.port: llm-d-router's chart and the Gateway API Inference
// Extension's conformance EPP both name their 9090 port metrics.
const DefaultEPPMetricsPort = "metrics"

// Scrape is a target's `scrape:` key, in one of two forms: a YAML list of
// URLs (URLs) or a mapping {port, path} (Pods).
type Scrape struct {
	// URLs are /metrics URLs of the replicas, each once.
	URLs []string
	// Pods, with scaleTargetRef, scrapes every Ready pod of the workload
	// at http://<pod IP>:<port><path> (with inferencePoolRef: the pool's
	// pods of the workload, or its EPP's pods; Load sets it to {path:
	// /metrics} when a pool target leaves scrape: out).
	Pods *PodScrape
}

// PodScrape is where a pod serves its metrics.
type PodScrape struct {
	// Port is a container port number (1..65535) or name (e.g. http);
	// empty: the pod's one declared container port.
	Port intstr.IntOrString `yaml:"port"`
	// Path is the metrics path (default /metrics).
	Path string `yaml:"path"`
	// BearerTokenFile, when set, is a file whose content (re-read at each
	// scrape, so a rotated token is used) is sent as "Authorization:
	// Bearer <token>" to these pods and to no other URL: Prometheus's
	// bearer_token_file, for an Endpoint Picker serving /metrics behind
	// authentication (llm-d's default), e.g. the pod's service-account
	// token /var/run/secrets/kubernetes.io/serviceaccount/token.
	BearerTokenFile string `yaml:"bearer_token_file"`
}

// Kube reports whether any target names a scaleTargetRef (and so needs a
// Kubernetes client).
func (c *File) Kube() bool {
	for i := range c.Targets {
		if c.Targets[i].ScaleTargetRef != nil || c.Targets[i].Roles.kube() {
			return true
		}
	}
	return false
}

// Replica names a target's replica model (pkg/replica, as simulate's
// --gpu, --model, --tp and --calibration flags).
type Replica struct {
	// GPU and Model are names of pkg/replica's tables (infscale gpu --list
	// shows them), e.g. h100-sxm and llama-3-8b.
	GPU   string `yaml:"gpu"`
	Model string `yaml:"model"`
	// TP is the tensor-parallel degree (default 1).
	TP int `yaml:"tp"`
	// ModelConfig is a Hugging Face config.json describing the model
	// (relative to the working directory), for a model outside the
	// catalog; it replaces model.
	ModelConfig string `yaml:"model_config"`
	// Calibration is a calibration file written by infscale load
	// --calibrate for this GPU and model, relative to the working
	// directory; empty: the reference model.
	Calibration string `yaml:"calibration"`

	capacity *recommend.Capacity // set by Load from the fields above
	// The digests (replica.Model.Digest, replica.Calibration.Digest) of
	// model_config's and calibration's contents as Load read them.
	modelConfigDigest, calibrationDigest string
}

// ModelConfigDigest is the digest of model_config's model as Load read
// it (replica.Model.Digest); empty without model_config.
func (r *Replica) ModelConfigDigest() string { return r.modelConfigDigest }

// CalibrationDigest is the digest of the calibration's fitted figures as
// Load read them (replica.Calibration.Digest); empty without calibration.
func (r *Replica) CalibrationDigest() string { return r.calibrationDigest }

// Guard is the target's runaway guard (recommend.Guard).
type Guard struct {
	// Off turns the guard off; the latency guards' bound by capacity
	// still applies.
	Off bool `yaml:"off"`
	// Settle and Drain are the holds after the replicas asked for serve
	// (0: the defaults).
	Settle model.Duration `yaml:"settle"`
	Drain  model.Duration `yaml:"drain"`
}

// Hold is a target's `hold:` key: a replica a dip releases is kept while
// its release is younger than the hold time its own past dips make
// cheapest (recommend.Hold).
type Hold struct {
	// BreakEven is what releasing a replica that is wanted again costs, in
	// seconds of one replica (> 0): simulate's recommended uses two cold
	// starts (182s for a 91 s one).
	BreakEven model.Duration `yaml:"break_even"`
}

// Metric is one signal the target scales on, with its target value.
type Metric struct {
	// Type is the signal (recommend.ParseSignal: queue, waiting, running,
	// kv, cpu, ttft).
	Type recommend.Signal `yaml:"type"`
	// Target is the per-replica target: requests (queue, waiting, running),
	// a fraction 0..1 (kv), percent of the CPU request (cpu), or seconds /
	// a duration such as 2s (ttft).
	Target Quantity `yaml:"target"`
	// Quantile is the TTFT or queue-time quantile (ttft and queuewait
	// only; default 0.95).
	Quantile float64 `yaml:"quantile"`
	// Window is that quantile's window (ttft and queuewait only; default 3m).
	Window model.Duration `yaml:"window"`
	// Query replaces the built-in PromQL of this signal (Prometheus mode);
	// it must return one number for the target.
	Query string `yaml:"query"`
}

// Zero is the scale-to-zero block.
type Zero struct {
	// Cooldown is how long the target must be idle before going to zero,
	// KEDA's cooldownPeriod as a duration (default 5m).
	Cooldown model.Duration `yaml:"cooldownPeriod"`
	// Held is a PromQL expression for the requests held in front of the
	// servers (KEDA HTTP add-on, activator, gateway); required.
	Held string `yaml:"held"`
	// HeldScrape is, in embedded mode (no prometheus.url), the /metrics URL
	// of an `infscale activator` whose infscale_activator_held_requests is
	// the held count (instead of Held).
	HeldScrape string `yaml:"held_scrape"`
	// FlowControl makes the held count the llm-d EPP's flow-control queue
	// (llm_d_epp_flow_control_queue_size, else its deprecated twin) read
	// from the target's own EPP (server: epp), in either mode: the gateway
	// holds the requests, no activator is needed (docs/llm-d.md).
	FlowControl bool `yaml:"flow_control"`
}

// Window is one schedule entry: from each cron firing, for Duration, the
// desired replicas are at least Min (KEDA's cron scaler's desiredReplicas).
type Window struct {
	// Cron is a 5-field cron expression (robfig/cron/v3 standard parser).
	Cron string `yaml:"cron"`
	// Duration is how long the floor lasts after each firing.
	Duration model.Duration `yaml:"duration"`
	// Min is the floor during the window.
	Min int `yaml:"desiredReplicas"`
	// Timezone is an IANA zone name (default UTC).
	Timezone string `yaml:"timezone"`
}
