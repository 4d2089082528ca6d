package main

import (
	"log/slog"
	"time"

	"github.com/infscale/infscale/pkg/kube"
)

// LeaderElectFlags are serve's leader-election flags, named as
// kube-controller-manager's (component-base's LeaderElectionConfiguration)
// with client-go's usual timings (docs/ha.md).
type LeaderElectFlags struct {
	LeaderElect   bool          `name:"leader-elect" help:"Run as one of several replicas: only the holder of a coordination.k8s.io Lease exports infscale_desired_replicas and writes (apply, pod_deletion_cost); every replica decides (docs/ha.md). The --leader-elect-* flags need it."`
	LeaseName     string        `name:"leader-elect-resource-name" default:"infscale" placeholder:"NAME" help:"Name of the Lease (default ${default})."`
	LeaseNS       string        `name:"leader-elect-resource-namespace" placeholder:"NS" help:"Namespace of the Lease (default: the pod's own in a cluster, else the kubeconfig context's, else default)."`
	Identity      string        `name:"leader-elect-identity" placeholder:"ID" help:"This replica's holder identity (default: $POD_NAME from the downward API, else the hostname with a random suffix)."`
	LeaseDuration time.Duration `name:"leader-elect-lease-duration" default:"15s" help:"How long the other replicas wait after the last renewal before taking the Lease."`
	RenewDeadline time.Duration `name:"leader-elect-renew-deadline" default:"10s" help:"How long the holder retries renewing before it stops writing; less than the lease duration."`
	RetryPeriod   time.Duration `name:"leader-elect-retry-period" default:"2s" help:"Wait between tries to acquire or renew."`
}

// needsLeaderElect refuses a --leader-elect-* flag given without
// --leader-elect (exit 2): it would be ignored, and a replica the user
// meant to run under a Lease would write alone.
func (f *LeaderElectFlags) needsLeaderElect(given map[string]bool) error {
	if f.LeaderElect {
		return nil
	}
	// Without --leader-elect there is no Lease.
	for _, name := range []string{"leader-elect-resource-name", "leader-elect-resource-namespace", "leader-elect-identity",
		"leader-elect-lease-duration", "leader-elect-renew-deadline", "leader-elect-retry-period"} {
		if err := needsFlag(given, name, false, "--leader-elect"); err != nil {
			return err
		}
	}
	return nil
}

// elector builds the Lease elector for serve with kubeconfig's client (nil
// without --leader-elect). Bad timings are usage errors (exit 2); a
// missing client configuration is exit 1, as any runtime I/O.
// check validates the flags without contacting the cluster (serve and
// serve --check-config): exit 2 naming the flags.
func (f *LeaderElectFlags) check() (kube.LeaseConfig, error) {
	cfg := kube.LeaseConfig{Name: f.LeaseName, Namespace: f.LeaseNS, Identity: f.Identity,
		LeaseDuration: f.LeaseDuration, RenewDeadline: f.RenewDeadline, RetryPeriod: f.RetryPeriod}
	if err := cfg.Check(); err != nil {
		return cfg, invalid(err)
	}
	if cfg.Name == "" {
		return cfg, invalidf("--leader-elect-resource-name: give the Lease's name")
	}
	return cfg, nil
}

func (f *LeaderElectFlags) elector(kubeconfig string, log *slog.Logger) (*kube.Elector, error) {
	if !f.LeaderElect {
		return nil, nil
	}
	cfg, err := f.check()
	if err != nil {
		return nil, err
	}
	if cfg.Namespace == "" {
		cfg.Namespace = kube.DefaultNamespace(kubeconfig)
	}
	rc, err := kube.RESTConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	// A hung request must not outlive the renew deadline (client-go's
	// resourcelock.NewFromKubeconfig does the same).
	rd := cfg.RenewDeadline
	if rd == 0 {
		rd = kube.DefaultRenewDeadline
	}
	rc.Timeout = max(rd/2, time.Second)
	client, err := kube.NewClientset(rc)
	if err != nil {
		return nil, err
	}
	return kube.NewElector(client, cfg, log)
}
