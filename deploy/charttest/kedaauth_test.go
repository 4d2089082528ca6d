package charttest

import (
	"strings"
	"testing"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
)

// TestKEDACredentials: the ScaledObjects read infscale_desired_replicas
// from serve's Prometheus unless keda.serverAddress names another, but
// KEDA does not have serve's prometheus.* credentials. A Prometheus that
// serve reaches with basic auth rendered a ScaledObject without any: KEDA's
// reads were refused (401), and every ScaledObject stayed in fallback,
// holding the replicas, for as long as the release ran. Such values now
// fail the render, naming the keys and the ways out; keda.authenticationRef
// and keda.metadata give KEDA its own credentials (KEDA's prometheus
// scaler: a trigger's authenticationRef, and authModes, customHeaders in
// its metadata).
func TestKEDACredentials(t *testing.T) {
	const url = "prometheus: {url: 'https://prometheus.example:9090', "
	for _, c := range []struct{ prom, key string }{
		{"basic_auth: {username: infscale, password_file: /a/password}", "prometheus.basic_auth"},
		{"authorization: {type: Bearer, credentials_file: /a/token}", "prometheus.authorization"},
		{"bearer_token_file: /a/token", "prometheus.bearer_token_file"},
		{"oauth2: {client_id: infscale, client_secret_file: /a/cs, token_url: 'https://idp/token'}", "prometheus.oauth2"},
		{"sigv4: {region: eu-west-1}", "prometheus.sigv4"},
		{"http_headers: {X-Scope-OrgID: {values: [team-a]}}", "prometheus.http_headers.X-Scope-OrgID"},
		{"tls_config: {cert_file: /a/tls.crt, key_file: /a/tls.key}", "prometheus.tls_config.cert_file"},
	} {
		values := url + c.prom + "}"
		_, err := tryRender(values)
		if err == nil || !strings.Contains(err.Error(), c.key) || !strings.Contains(err.Error(), "keda.authenticationRef") || !strings.Contains(err.Error(), "keda.serverAddress") {
			t.Errorf("values %s: error %v; want one naming %s, keda.authenticationRef and keda.serverAddress", values, err, c.key)
		}
	}

	// A CA alone is no credential, nor a header that is none: rendered as
	// before. A header read from a file is one.
	render(t, url+"tls_config: {ca_file: /a/ca.crt}}")
	render(t, url+"http_headers: {User-Agent: {values: [infscale]}}}")
	if _, err := tryRender(url + "http_headers: {X-Api-Key: {files: [/a/key]}}}"); err == nil || !strings.Contains(err.Error(), "prometheus.http_headers.X-Api-Key") {
		t.Errorf("a header from a file: error %v, want one naming prometheus.http_headers.X-Api-Key", err)
	}
	// keda.metadata that gives no credentials leaves the check on.
	if _, err := tryRender(url + "basic_auth: {username: infscale, password_file: /a/password}}\nkeda: {metadata: {unsafeSsl: 'true'}}"); err == nil || !strings.Contains(err.Error(), "prometheus.basic_auth") {
		t.Errorf("keda.metadata.unsafeSsl alone: error %v, want one naming prometheus.basic_auth", err)
	}

	// Another Prometheus for KEDA: its serverAddress, no credentials.
	objs := render(t, url+"basic_auth: {username: infscale, password_file: /a/password}}\nkeda: {serverAddress: 'http://prometheus-operated.monitoring.svc:9090'}")
	tr := only[*kedav1alpha1.ScaledObject](t, objs).Spec.Triggers[0]
	if tr.Metadata["serverAddress"] != "http://prometheus-operated.monitoring.svc:9090" || tr.AuthenticationRef != nil {
		t.Errorf("keda.serverAddress: trigger %+v, want serverAddress http://prometheus-operated.monitoring.svc:9090 and no authenticationRef", tr)
	}

	// KEDA's own credentials for serve's Prometheus.
	objs = render(t, url+"basic_auth: {username: infscale, password_file: /a/password}}\nkeda: {authenticationRef: {name: prometheus-auth, kind: ClusterTriggerAuthentication}, metadata: {authModes: basic}}")
	tr = only[*kedav1alpha1.ScaledObject](t, objs).Spec.Triggers[0]
	want := map[string]string{
		"serverAddress":    "https://prometheus.example:9090",
		"query":            `max(infscale_desired_replicas{target="chat", namespace="infscale", service="infscale"})`,
		"threshold":        "1",
		"ignoreNullValues": "false",
		"authModes":        "basic",
	}
	if tr.AuthenticationRef == nil || tr.AuthenticationRef.Name != "prometheus-auth" || tr.AuthenticationRef.Kind != "ClusterTriggerAuthentication" || len(tr.Metadata) != len(want) {
		t.Errorf("authenticationRef: trigger %+v, want authenticationRef prometheus-auth (ClusterTriggerAuthentication) and metadata %v", tr, want)
	}
	for k, v := range want {
		if tr.Metadata[k] != v {
			t.Errorf("authenticationRef: metadata %s = %q, want %q", k, tr.Metadata[k], v)
		}
	}

	// A tenant header: customHeaders, no authenticationRef needed.
	objs = render(t, url+"http_headers: {X-Scope-OrgID: {values: [team-a]}}}\nkeda: {metadata: {customHeaders: X-Scope-OrgID=team-a}}")
	if tr := only[*kedav1alpha1.ScaledObject](t, objs).Spec.Triggers[0]; tr.Metadata["customHeaders"] != "X-Scope-OrgID=team-a" || tr.AuthenticationRef != nil {
		t.Errorf("customHeaders: trigger %+v", tr)
	}

	// keda.metadata may not set what the chart sets.
	for _, k := range []string{"serverAddress", "query", "threshold", "activationThreshold", "ignoreNullValues"} {
		if _, err := tryRender("keda: {metadata: {" + k + ": x}}"); err == nil || !strings.Contains(err.Error(), "keda.metadata."+k) {
			t.Errorf("keda.metadata.%s: error %v, want one naming it", k, err)
		}
	}
	// authenticationRef without a name, a kind KEDA does not take, a
	// metadata value that is not a string: the schema.
	for _, v := range []string{"keda: {authenticationRef: {kind: TriggerAuthentication}}", "keda: {authenticationRef: {name: a, kind: Secret}}", "keda: {metadata: {unsafeSsl: true}}"} {
		if _, err := tryRender(v); err == nil {
			t.Errorf("%s: rendered, want the schema to refuse it", v)
		}
	}
}

// TestKEDASigV4: serve signing its queries with SigV4 (Amazon Managed
// Prometheus) and KEDA reading the same workspace: KEDA's prometheus
// scaler signs only when its trigger names awsRegion, with the identity of
// its authenticationRef (a TriggerAuthentication of podIdentity provider
// aws) or, with identityOwner: operator, KEDA operator's own; the generic
// check let an authenticationRef alone through, and docs/chart.md's AMP
// example gave KEDA neither, so its ScaledObjects read unsigned and stayed
// in fallback. With no identity, or KEDA operator's without awsRegion in
// the metadata (it has no TriggerAuthentication to hold one), the render
// fails naming them; an authenticationRef renders with or without
// keda.metadata.awsRegion, as KEDA also reads awsRegion from the
// TriggerAuthentication (deploy/kedae2e's TestKEDASigV4Region); the
// documented values render the trigger KEDA signs.
func TestKEDASigV4(t *testing.T) {
	const amp = "prometheus:\n  url: https://aps-workspaces.eu-west-1.amazonaws.com/workspaces/ws-0123abcd\n  sigv4: {region: eu-west-1}\nserviceAccount:\n  annotations: {eks.amazonaws.com/role-arn: 'arn:aws:iam::123456789012:role/infscale-amp-query'}\n"
	for _, keda := range []string{"", "keda: {metadata: {awsRegion: ''}}\n", "keda: {metadata: {awsRegion: eu-west-1}}\n", "keda: {metadata: {identityOwner: operator}}\n"} {
		if _, err := tryRender(amp + keda); err == nil || !strings.Contains(err.Error(), "keda.metadata.awsRegion") || !strings.Contains(err.Error(), "podIdentity: {provider: aws}") {
			t.Errorf("%q: error %v, want one naming keda.metadata.awsRegion and a podIdentity aws TriggerAuthentication", keda, err)
		}
	}
	tr := only[*kedav1alpha1.ScaledObject](t, render(t, amp+"keda:\n  authenticationRef: {name: keda-aws}\n  metadata: {awsRegion: eu-west-1}\n")).Spec.Triggers[0]
	if tr.AuthenticationRef == nil || tr.AuthenticationRef.Name != "keda-aws" || tr.Metadata["awsRegion"] != "eu-west-1" ||
		tr.Metadata["serverAddress"] != "https://aps-workspaces.eu-west-1.amazonaws.com/workspaces/ws-0123abcd" {
		t.Errorf("trigger %+v, want authenticationRef keda-aws, awsRegion eu-west-1 and the workspace's URL", tr)
	}
	// The region in the TriggerAuthentication (a secretTargetRef or
	// configMapTargetRef with parameter awsRegion): KEDA reads it from
	// there too (deploy/kedae2e's TestKEDASigV4Region).
	tr = only[*kedav1alpha1.ScaledObject](t, render(t, amp+"keda: {authenticationRef: {name: keda-aws}}\n")).Spec.Triggers[0]
	if tr.AuthenticationRef == nil || tr.AuthenticationRef.Name != "keda-aws" {
		t.Errorf("trigger %+v, want authenticationRef keda-aws", tr)
	}
	// KEDA operator's own identity: identityOwner operator, no authenticationRef.
	render(t, amp+"keda: {metadata: {awsRegion: eu-west-1, identityOwner: operator}}\n")
	// KEDA on another Prometheus needs no signing.
	render(t, amp+"keda: {serverAddress: 'http://prometheus-operated.monitoring.svc:9090'}\n")
}
