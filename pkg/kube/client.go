// Package kube is infscale's Kubernetes edge: the client, a target's workload
// named as the HPA names it (scaleTargetRef), its Ready pods, and the writes
// (spec.replicas through the scale subresource, pod-deletion-cost, the Lease).
// Prometheus mode needs none of it; nothing here is imported by pkg/recommend.
package kube

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// RESTConfig returns the client configuration: from kubeconfig when it is
// set (a path, "~" expanded), else in-cluster (the pod's service account),
// else $KUBECONFIG or ~/.kube/config as kubectl would read them. The error
// is a *ConfigError saying which sources were tried.
func RESTConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		if len(kubeconfig) > 1 && kubeconfig[:2] == "~/" {
			if home, err := os.UserHomeDir(); err == nil {
				kubeconfig = filepath.Join(home, kubeconfig[2:])
			}
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err == nil {
			err = checkServer(cfg.Host)
		}
		if err != nil {
			return nil, &ConfigError{fmt.Errorf("kubeconfig %s: %w", kubeconfig, explainEmpty(err))}
		}
		return cfg, nil
	}
	if cfg, err := rest.InClusterConfig(); err == nil {
		return cfg, nil
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		// read names where the kubeconfig was looked for, and which of
		// its files do not exist; found whether any does.
		read, found := "~/.kube/config", true
		if _, serr := os.Stat(clientcmd.RecommendedHomeFile); serr != nil {
			read, found = "~/.kube/config does not exist", false
		}
		if env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
			read, found = "$KUBECONFIG ("+env+")", false
			for _, p := range filepath.SplitList(env) {
				if _, serr := os.Stat(p); serr != nil {
					read += "; " + p + " does not exist"
				} else {
					found = true
				}
			}
		}
		if !found && clientcmd.IsEmptyConfig(err) {
			return nil, &ConfigError{fmt.Errorf("no Kubernetes client configuration: not in a cluster (no service account), and no kubeconfig: %s; pass --kubeconfig", read)}
		}
		return nil, &ConfigError{fmt.Errorf("no Kubernetes client configuration: not in a cluster (no service account), and from %s: %w; pass --kubeconfig", read, explainEmpty(err))}
	}
	if err := checkServer(cfg.Host); err != nil {
		read := "~/.kube/config"
		if env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
			read = "$KUBECONFIG (" + env + ")"
		}
		return nil, &ConfigError{fmt.Errorf("kubeconfig %s: %w", read, err)}
	}
	return cfg, nil
}

// checkServer refuses a cluster server URL client-go would only fail on at
// its first request (an unsupported protocol scheme, "htp://..."): the
// kubeconfig is wrong, not the cluster. A host without a scheme is
// client-go's https (http when insecure).
func checkServer(host string) error {
	if !strings.Contains(host, "://") {
		return nil
	}
	u, err := url.Parse(host)
	if err != nil {
		return fmt.Errorf("cluster server %q: %w", host, err)
	}
	if u.Scheme != "https" && u.Scheme != "http" {
		return fmt.Errorf("cluster server %q: scheme %q, want https:// (or http://)", host, u.Scheme)
	}
	if u.Host == "" {
		return fmt.Errorf("cluster server %q: no host, want https://HOST[:PORT]", host)
	}
	return nil
}

// explainEmpty replaces clientcmd's error for a configuration with no
// cluster ("no configuration has been provided, try setting
// KUBERNETES_MASTER environment variable", which names a variable
// client-go no longer reads) with what is wrong with the file; other errors
// are returned as they are.
func explainEmpty(err error) error {
	if clientcmd.IsEmptyConfig(err) {
		return errors.New("no cluster, user or current-context: not a kubeconfig (the file kubectl reads: clusters, users, contexts, current-context)")
	}
	return err
}

// ConfigError is RESTConfig's failure to find or read a client
// configuration (a missing or malformed kubeconfig, no context): the user's
// input, not the cluster, is wrong. Err names the file and clientcmd's reason.
type ConfigError struct{ Err error }

func (e *ConfigError) Error() string { return e.Err.Error() }
func (e *ConfigError) Unwrap() error { return e.Err }

// NewClientset returns a typed clientset for cfg with infscale's user agent.
func NewClientset(cfg *rest.Config) (kubernetes.Interface, error) {
	cfg = rest.CopyConfig(cfg)
	if cfg.UserAgent == "" {
		cfg.UserAgent = "infscale"
	}
	return kubernetes.NewForConfig(cfg)
}

// Connect is the Cluster of kubeconfig (RESTConfig's sources) with
// kubectl's default namespace (DefaultNamespace).
func Connect(kubeconfig string) (*Cluster, error) {
	cfg, err := RESTConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	return NewCluster(cfg, DefaultNamespace(kubeconfig))
}
