package kube

import "k8s.io/apimachinery/pkg/runtime/schema"

// RESTMappingCall is Cluster.restMapping for the external tests: the
// lookup in flight for gk in version, an opaque handle compared by identity.
func RESTMappingCall(c *Cluster, gk schema.GroupKind, version string) any {
	return c.restMapping(gk, version)
}
