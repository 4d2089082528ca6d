// Package kubee2e runs infscale against a real kube-apiserver: the API
// server of k8s.io/kubernetes v1.37.2 (cmd/kube-apiserver/app/testing, the
// server Kubernetes' own integration tests use) in-process, on an embedded
// etcd (go.etcd.io/etcd/server/v3/embed), both on loopback ports with
// temporary directories. No kubelet, scheduler or controller manager runs:
// the tests create the pods a ReplicaSet would, with the Deployment's labels,
// and set their Ready condition and pod IP themselves.
//
// It is its own module because k8s.io/kubernetes as a dependency needs a
// replace directive for each of its staging modules and brings the whole API
// server into the build list; the main module stays on client-go alone.
// `make test-kube` runs it (part of `make test`).
package kubee2e
