package config

import "github.com/infscale/infscale/pkg/modelserver"

// orderedKinds are workload kinds whose scale-down removes pods by their
// ordinal (the highest first), never reading pod-deletion-cost.
var orderedKinds = map[string]string{
	"StatefulSet":     "a StatefulSet removes its highest ordinal first",
	"LeaderWorkerSet": "a LeaderWorkerSet's groups are a StatefulSet's, removed highest ordinal first",
}

// podDeletionCost checks pod_deletion_cost: it needs the workload
// (scaleTargetRef), one whose pods a ReplicaSet removes, and each pod's
// own page (embedded mode, scrape: {port, path}).
func (v *validator) podDeletionCost(p string, t *Target) {
	if !t.PodDeletionCost {
		return
	}
	key := p + ".pod_deletion_cost"
	switch ref := t.ScaleTargetRef; {
	case ref == nil:
		v.at(key, "needs scaleTargetRef: the pods annotated are the workload's (e.g. {apiVersion: apps/v1, kind: Deployment, name: chat})")
	case orderedKinds[ref.Kind] != "":
		v.at(key, "%s and ignores controller.kubernetes.io/pod-deletion-cost; only ReplicaSet-managed workloads (Deployment, ReplicaSet, Argo Rollout) read it: drop pod_deletion_cost", orderedKinds[ref.Kind])
	case t.InferencePoolRef != nil && t.Server == modelserver.EPP:
		v.at(key, "reads each model-server pod's running + waiting from its own page; with server: epp the pages read are the Endpoint Picker's: drop pod_deletion_cost, or read the pool's pods (server: vllm)")
	case t.Scrape.Pods == nil || !v.cfg.Prometheus.Embedded():
		v.at(key, "reads each pod's running + waiting from its own page: embedded mode (no prometheus.url) with scrape: {port, path}")
	}
}
