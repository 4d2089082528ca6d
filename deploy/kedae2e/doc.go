// Package kedae2e runs KEDA's own prometheus scaler (v2.21.0,
// github.com/kedacore/keda/v2/pkg/scalers) with the trigger of
// deploy/keda/scaledobject.yaml against a real Prometheus (the binary pinned
// in tools/) that scrapes two infscale exporters, and a third of another
// installation with the same target name, and asserts what KEDA reports:
// the value for the shipped max() query (its installation's, not the
// other's), KEDA's error on several
// series, and its error (ignoreNullValues "false") or 0 (KEDA's default)
// on an empty result; and with each trigger of deploy/llm-d/pd/scaledobjects.yaml
// (equal to the Helm chart's for a prefill/decode pair target), the value
// of its own role's series; KEDA's cron scaler with the cron triggers
// `infscale profile` prints (accepted, active exactly inside each window);
// and against a fake Amazon Managed Prometheus, the region and identity
// its SigV4 signing takes (TestKEDASigV4Region).
//
// It is its own module because pkg/scalers holds all of KEDA's scalers in
// one package: the build list is 287 modules (cloud SDKs, database and queue
// clients), a first build takes minutes, and it cannot share a build list
// with the main module (see prometheus_test.go). `make test-keda` runs it
// (part of `make test`).
package kedae2e
