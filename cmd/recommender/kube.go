package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/kube"
	"github.com/infscale/infscale/pkg/modelserver"
	"github.com/infscale/infscale/pkg/statefile"
)

// KubeCmd is `infscale kube`: one decision on a live workload, its current
// replicas from the scale subresource and its signals scraped from its
// Ready pods, optionally written back (docs/kubernetes.md).
type KubeCmd struct {
	Namespace  string             `short:"n" placeholder:"NS" help:"Namespace of the workload (default: the kubeconfig context's; in a pod, its own)."`
	Deployment string             `placeholder:"NAME" help:"The Deployment (apps/v1) to decide for; or --name with --kind for another kind."`
	Name       string             `placeholder:"NAME" help:"The workload, of --kind (any resource with a scale subresource: StatefulSet, Rollout, LeaderWorkerSet, ...)."`
	Kind       string             `placeholder:"KIND" help:"Kind of --name, as an HPA's scaleTargetRef.kind (e.g. StatefulSet)."`
	APIVersion string             `name:"api-version" placeholder:"G/V" help:"apiVersion of --kind, as scaleTargetRef.apiVersion (default apps/v1 for Deployment, StatefulSet, ReplicaSet; else required, e.g. argoproj.io/v1alpha1)."`
	Port       string             `placeholder:"PORT" help:"Container port (number or name) of the pods' metrics (default: the one port the pod declares)."`
	Path       string             `default:"/metrics" placeholder:"URLPATH" help:"Metrics path on the pods (default ${default})."`
	Server     modelserver.Server `default:"auto" placeholder:"S" help:"Server profile of the pods' pages: auto (detect), ${servers} (default ${default})."`
	Timeout    time.Duration      `default:"10s" placeholder:"D" help:"Timeout of the whole command: its API reads and writes, the pods' scrapes (default ${default})."`
	Kubeconfig string             `type:"path" placeholder:"FILE" help:"kubeconfig file (default: in a pod its service account, else $KUBECONFIG or ~/.kube/config)."`
	Proxy      bool               `help:"Scrape the pods through the API server's pod proxy (from outside the cluster network; needs get on pods/proxy) instead of at their IPs."`
	Apply      bool               `help:"Write the decision to the workload's spec.replicas through its scale subresource when it differs (conflict-safe); refused when an HPA or a KEDA ScaledObject scales the workload."`

	PolicyFlags `embed:""`

	State  string `placeholder:"FILE" help:"JSON file with the window history and scale events (as decide's --state): a cron job remembers, like the HPA controller. With --apply, written only once the decision is applied."`
	Now    string `placeholder:"T" help:"Decision time: unix seconds or RFC3339 (default: the clock)."`
	Output string `short:"o" enum:"text,json" default:"text" help:"Output format: text or json (decide's)."`
}

// connectCluster makes the Kubernetes client (tests replace it).
var connectCluster = kube.Connect

// ref is the workload the flags name, or the flag error (exit 2).
func (c *KubeCmd) ref() (kube.Ref, error) {
	r := kube.Ref{Namespace: c.Namespace}
	switch {
	case c.Deployment != "" && (c.Name != "" || c.Kind != ""):
		return r, invalidf("--deployment NAME is --name NAME --kind Deployment: give one of them")
	case c.Deployment != "":
		r.APIVersion, r.Kind, r.Name = "apps/v1", "Deployment", c.Deployment
		if c.APIVersion != "" {
			r.APIVersion = c.APIVersion
		}
	case c.Name != "" && c.Kind == "":
		return r, invalidf("--name %s: needs --kind (e.g. StatefulSet) and, outside apps/v1, --api-version", c.Name)
	case c.Name != "":
		r.APIVersion, r.Kind, r.Name = c.APIVersion, c.Kind, c.Name
		if r.APIVersion == "" {
			switch c.Kind {
			case "Deployment", "StatefulSet", "ReplicaSet":
				r.APIVersion = "apps/v1"
			default:
				return r, invalidf("--kind %s: needs --api-version (group/version, e.g. argoproj.io/v1alpha1 for Rollout)", c.Kind)
			}
		}
	default:
		return r, invalidf("name the workload: --deployment NAME, or --name NAME --kind KIND [--api-version G/V]")
	}
	if field, err := config.CheckScaleTargetRef(r.APIVersion, r.Kind); err != nil {
		flag := "--api-version"
		if field == "kind" {
			flag = "--kind"
		}
		return r, invalidf("%s %v", flag, err)
	}
	if msgs := validation.IsDNS1123Subdomain(r.Name); len(msgs) > 0 {
		flag := "--name"
		if c.Deployment != "" {
			flag = "--deployment"
		}
		return r, invalidf("%s %q: not a Kubernetes object name (lowercase letters, digits, '-' and '.', at most 253)", flag, r.Name)
	}
	if r.Namespace != "" {
		if msgs := validation.IsDNS1123Label(r.Namespace); len(msgs) > 0 {
			return r, invalidf("--namespace %q: a namespace name is lowercase letters, digits and '-' (at most 63)", r.Namespace)
		}
	}
	return r, nil
}

// port parses --port: a number 1..65535 or a container port name.
func (c *KubeCmd) port() (intstr.IntOrString, error) {
	if c.Port == "" {
		return intstr.IntOrString{}, nil
	}
	p := intstr.Parse(c.Port)
	switch {
	case p.Type == intstr.Int && (p.IntVal < 1 || p.IntVal > 65535):
		return p, invalidf("--port %s: a port is 1..65535 or a container port's name", c.Port)
	case p.Type == intstr.String && len(validation.IsValidPortName(p.StrVal)) > 0:
		return p, invalidf("--port %q: not a port number or container port name (%s)", c.Port, strings.Join(validation.IsValidPortName(p.StrVal), "; "))
	}
	return p, nil
}

// Run checks the flags and the policy before contacting the cluster, reads
// the scale and the Ready pods, decides as decide does with the pods' pages
// and --current = spec.replicas, and with --apply writes the decision. The
// whole command ends within --timeout (an API server that never answers
// fails it), and at once when the context ends (a signal).
func (c *KubeCmd) Run(e *env) error {
	err := c.run(e)
	if err != nil && errors.Is(err, context.DeadlineExceeded) && e.ctx.Err() == nil {
		return fmt.Errorf("not done within --timeout %s: %w", c.Timeout, err)
	}
	return err
}

func (c *KubeCmd) run(e *env) error {
	ref, err := c.ref()
	if err != nil {
		return err
	}
	port, err := c.port()
	if err != nil {
		return err
	}
	if !strings.HasPrefix(c.Path, "/") {
		return invalidf("--path %q: a path starts with /, e.g. /metrics", c.Path)
	}
	if c.Timeout <= 0 {
		return invalidf("--timeout %s: want a duration > 0, e.g. 10s", c.Timeout)
	}
	if _, err := c.policy(); err != nil {
		return err
	}
	// client-go's own retries and discovery failures would print klog
	// lines to stderr; the error this command returns says what failed.
	klog.SetLogger(logr.Discard())
	ctx, cancel := context.WithTimeout(e.ctx, c.Timeout)
	defer cancel()
	e = &env{ctx: ctx, stdin: e.stdin, stdout: e.stdout, stderr: e.stderr}
	cl, err := connectCluster(c.Kubeconfig)
	if err != nil {
		return err
	}
	if c.Proxy && cl.Config == nil {
		return errors.New("--proxy: the client has no API server configuration")
	}
	defer cl.Close()
	cl.SyncTimeout, cl.RequestTimeout = c.Timeout, c.Timeout
	if ref.Namespace == "" {
		ref.Namespace = cl.Namespace
	}
	w, err := cl.Scale(e.ctx, ref)
	if err != nil {
		if apierrors.IsNotFound(err) {
			hint := "check the name and -n"
			if c.Namespace == "" {
				hint = "check the name, or give -n (the kubeconfig context's namespace was used)"
			}
			return fmt.Errorf("%w (no %s %s in namespace %s: %s)", err, ref.Kind, ref.Name, ref.Namespace, hint)
		}
		return err
	}
	pods, err := cl.WorkloadPods(e.ctx, w, func(p *corev1.Pod) (string, error) {
		if c.Proxy {
			return kube.ProxyURL(cl.Config.Host, p, port, c.Path)
		}
		return kube.PodURL(p, port, c.Path)
	})
	if err != nil {
		return err
	}
	if pods.URLErr != nil {
		if pe, ok := errors.AsType[*kube.PortError](pods.URLErr); ok {
			pe.Flag = "--port NAME|NUMBER" // this command's, not serve's config key
		}
		return invalidf("--port: %v", pods.URLErr)
	}
	urls, starting := pods.URLs, pods.Starting
	cur := max(int(w.Replicas), len(urls)) // a rollout's surge pods are Ready beyond spec
	var client *http.Client
	if c.Proxy {
		if client, err = rest.HTTPClientFor(cl.Config); err != nil {
			return fmt.Errorf("--proxy: %w", err)
		}
		client.Timeout = c.Timeout
		client.Transport = proxyRefusal{client.Transport}
	}
	d := &DecideCmd{client: client, Pages: urls, Server: c.Server, Timeout: c.Timeout, Current: &cur, Unready: min(starting, cur-len(urls)), workloadPods: true,
		PolicyFlags: c.PolicyFlags, State: c.State, Now: c.Now, Output: c.Output}
	if c.Apply && c.State != "" {
		// --state records the decision once it is applied: a refused,
		// failed or interrupted write would leave in it a scale event that
		// never happened (the next run's rate limit and runaway guard
		// would count replicas that never came). Locked from the read to
		// that write, as decide's.
		unlock, err := statefile.Lock(e.ctx, c.State)
		if err != nil {
			return err
		}
		defer unlock()
		d.saveLater = true
	}
	text := c.Output != "json"
	info := e.stderr // json: stdout holds the decision alone
	if text {
		info = e.stdout
	}
	fmt.Fprintf(info, "%s: spec.replicas %d, %d Ready pod(s) scraped, %d starting\n", w.Ref, w.Replicas, len(urls), starting)
	dec, err := d.decide(e)
	if err != nil {
		return err
	}
	if !c.Apply {
		return nil
	}
	if int32(dec.Desired) == w.Replicas {
		fmt.Fprintf(info, "not applied: spec.replicas is already %d\n", w.Replicas)
	} else if err := apply(e.ctx, info, &kube.Applier{Cluster: cl}, w.Ref, dec.Desired); err != nil {
		if d.save != nil && e.ctx.Err() == nil {
			return fmt.Errorf("%w\n(--state %s not updated: the decision was not applied)", err, c.State)
		}
		return err
	}
	if d.save != nil {
		return d.save()
	}
	return nil
}

// apply writes desired and says what happened; a refusal (an HPA or a
// ScaledObject) names the scaler.
func apply(ctx context.Context, w io.Writer, a *kube.Applier, ref kube.Ref, desired int) error {
	got, err := a.Apply(ctx, ref, int32(desired))
	var se *kube.ScaledError
	switch {
	case errors.As(err, &se):
		return fmt.Errorf("not applied: %w", err)
	case err != nil:
		return err
	case !got.Wrote:
		fmt.Fprintf(w, "not applied: spec.replicas is already %d\n", desired)
	default:
		fmt.Fprintf(w, "applied: spec.replicas %d -> %d\n", got.From, desired)
	}
	return nil
}

// proxyRefusal turns the API server's refusal of a pod proxy request (401,
// 403: its own Status, not the pod's page) into an error carrying the API
// server's message, which names the verb and resource to grant (get on
// pods/proxy); the page reader would say only "HTTP status 403".
type proxyRefusal struct{ base http.RoundTripper }

func (p proxyRefusal) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := p.base.RoundTrip(req)
	if err != nil || (resp.StatusCode != http.StatusForbidden && resp.StatusCode != http.StatusUnauthorized) {
		return resp, err
	}
	defer resp.Body.Close()
	var st metav1.Status
	b, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	if json.Unmarshal(b, &st) != nil || st.Kind != "Status" {
		return nil, fmt.Errorf("the API server refused the pod proxy: HTTP %s (--proxy needs get on pods/proxy)", resp.Status)
	}
	return nil, fmt.Errorf("the API server refused the pod proxy: %s (--proxy needs get on pods/proxy)", st.Message)
}
