package config

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// kubeStateReplicas maps a built-in workload kind (group/version, kind)
// to kube-state-metrics' gauge of its spec.replicas and the label naming
// the object (kube-state-metrics docs/metrics/workload/*-metrics.md, all
// STABLE, exported by its default collectors).
var kubeStateReplicas = map[schema.GroupVersionKind][2]string{
	{Group: "apps", Version: "v1", Kind: "Deployment"}:        {"kube_deployment_spec_replicas", "deployment"},
	{Group: "apps", Version: "v1", Kind: "StatefulSet"}:       {"kube_statefulset_replicas", "statefulset"},
	{Group: "apps", Version: "v1", Kind: "ReplicaSet"}:        {"kube_replicaset_spec_replicas", "replicaset"},
	{Group: "", Version: "v1", Kind: "ReplicationController"}: {"kube_replicationcontroller_spec_replicas", "replicationcontroller"},
}

// ErrNoReplicasHistory is HistoryReplicas' error for a scaleTargetRef
// whose replicas have no series infscale knows in Prometheus.
var ErrNoReplicasHistory = errors.New("no replicas series for the scaleTargetRef")

// HistoryReplicas is the PromQL query of the replicas t ran, for reading
// its Prometheus history (backtest, tune, profile; a P/D target's role
// through RoleTarget): its replicas: query; else, with a scaleTargetRef
// of a built-in kind (apps/v1 Deployment, StatefulSet, ReplicaSet, v1
// ReplicationController), kube-state-metrics' gauge of that workload's
// spec.replicas (what serve reads from the scale subresource), the most
// of its series (one object scraped twice is not twice the replicas),
// e.g. max(kube_deployment_spec_replicas{namespace="llm",deployment="chat"});
// else "" (the pods reporting). A scaleTargetRef of another kind (a CRD:
// kube-state-metrics exports none by default) or without a namespace
// (the file's and the target's left out: the client's default is not
// known offline) is "" with an error wrapping ErrNoReplicasHistory that
// says why.
func (t *Target) HistoryReplicas() (string, error) {
	ref := t.ScaleTargetRef
	if t.Replicas != "" || ref == nil {
		return t.Replicas, nil
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return "", fmt.Errorf("%w: apiVersion %q: %v", ErrNoReplicasHistory, ref.APIVersion, err)
	}
	ksm, ok := kubeStateReplicas[gv.WithKind(ref.Kind)]
	if !ok {
		return "", fmt.Errorf("%w: kube-state-metrics exports no replicas gauge of %s %s by default (it does for apps/v1 Deployment, StatefulSet, ReplicaSet and v1 ReplicationController)", ErrNoReplicasHistory, ref.APIVersion, ref.Kind)
	}
	if t.Namespace == "" {
		return "", fmt.Errorf("%w: %s %s has no namespace (serve uses the client's default, not known offline): set namespace: in the file or the target", ErrNoReplicasHistory, ref.Kind, ref.Name)
	}
	return fmt.Sprintf("max(%s{namespace=%q,%s=%q})", ksm[0], t.Namespace, ksm[1], ref.Name), nil
}
