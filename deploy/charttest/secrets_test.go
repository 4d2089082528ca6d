package charttest

import (
	"strings"
	"testing"
)

// TestInlineSecretsRefused: a Prometheus secret given inline in values
// (basic_auth.password, authorization.credentials, bearer_token,
// oauth2.client_secret) fails the render, naming the key and its _file
// form. Before, it was rendered into the ConfigMap in clear: readable by
// whoever may read ConfigMaps in the namespace (often more than may read
// Secrets), in `kubectl describe` and in GitOps diffs.
func TestInlineSecretsRefused(t *testing.T) {
	for _, c := range []struct{ prom, key string }{
		{"basic_auth: {username: infscale, password: hunter2}", "prometheus.basic_auth.password"},
		{"authorization: {type: Bearer, credentials: hunter2}", "prometheus.authorization.credentials"},
		{"bearer_token: hunter2", "prometheus.bearer_token"},
		{"oauth2: {client_id: infscale, client_secret: hunter2, token_url: 'https://idp/token'}", "prometheus.oauth2.client_secret"},
	} {
		values := "prometheus: {url: 'http://prometheus:9090', " + strings.TrimSuffix(c.prom, "") + "}"
		_, err := tryRender(values)
		if err == nil || !strings.Contains(err.Error(), c.key+": ") || !strings.Contains(err.Error(), c.key+"_file") || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("values %s: error %v; want one naming %s and %s_file, without the secret", values, err, c.key, c.key)
		}
	}
	// The _file forms render (KEDA with its own credentials:
	// TestKEDACredentials).
	render(t, "prometheus: {url: 'http://prometheus:9090', basic_auth: {username: infscale, password_file: /etc/infscale-auth/password}}\nkeda: {authenticationRef: {name: prometheus-auth}, metadata: {authModes: basic}}")
}

// TestInlineKeyAndHeaderSecretsRefused: the other secrets prometheus/common
// takes inline were still rendered into the ConfigMap in clear: a TLS
// client key (tls_config.key, oauth2.tls_config.key) and a header's secret
// values (http_headers.H.secrets: a tenant token, an API key). Each fails
// the render, naming its file form (key_file; the header's files).
func TestInlineKeyAndHeaderSecretsRefused(t *testing.T) {
	for _, c := range []struct{ prom, key, use string }{
		{"tls_config: {cert_file: /c/tls.crt, key: hunter2}", "prometheus.tls_config.key", "prometheus.tls_config.key_file"},
		{"oauth2: {client_id: infscale, client_secret_file: /s/cs, token_url: 'https://idp/token', tls_config: {key: hunter2}}", "prometheus.oauth2.tls_config.key", "prometheus.oauth2.tls_config.key_file"},
		{"http_headers: {X-Scope-OrgID: {values: [team-a]}, X-Api-Key: {secrets: [hunter2]}}", "prometheus.http_headers.X-Api-Key.secrets", "prometheus.http_headers.X-Api-Key.files"},
	} {
		values := "prometheus: {url: 'http://prometheus:9090', " + c.prom + "}"
		_, err := tryRender(values)
		if err == nil || !strings.Contains(err.Error(), c.key+": ") || !strings.Contains(err.Error(), c.use) || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("values %s: error %v; want one naming %s and %s, without the secret", values, err, c.key, c.use)
		}
	}
	// Their file forms, and a header's plain values, render.
	render(t, "prometheus: {url: 'http://prometheus:9090', tls_config: {cert_file: /c/tls.crt, key_file: /c/tls.key}, http_headers: {X-Scope-OrgID: {values: [team-a]}, X-Api-Key: {files: [/s/key]}}}\nkeda: {authenticationRef: {name: prometheus-auth}, metadata: {authModes: 'tls,custom'}}")
}

// TestInlineSigV4SecretRefused: prometheus.sigv4.secret_key, which has no
// _file form, fails the render naming the two ways AWS's default chain
// takes credentials in a pod (IRSA's role annotation; the AWS_* variables
// from a Secret); sigv4 with the region alone renders.
func TestInlineSigV4SecretRefused(t *testing.T) {
	values := "prometheus: {url: 'https://aps-workspaces.eu-west-1.amazonaws.com/workspaces/ws-1', sigv4: {region: eu-west-1, access_key: AKID, secret_key: hunter2}}"
	_, err := tryRender(values)
	if err == nil || !strings.Contains(err.Error(), "prometheus.sigv4.secret_key: ") || !strings.Contains(err.Error(), "eks.amazonaws.com/role-arn") ||
		!strings.Contains(err.Error(), "AWS_SECRET_ACCESS_KEY") || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("values %s: error %v; want one naming prometheus.sigv4.secret_key, the IRSA annotation and AWS_SECRET_ACCESS_KEY, without the secret", values, err)
	}
	render(t, "prometheus: {url: 'https://aps-workspaces.eu-west-1.amazonaws.com/workspaces/ws-1', sigv4: {region: eu-west-1}}\nserviceAccount: {annotations: {eks.amazonaws.com/role-arn: 'arn:aws:iam::123456789012:role/infscale'}}\nkeda: {authenticationRef: {name: aws-amp, kind: ClusterTriggerAuthentication}, metadata: {awsRegion: eu-west-1}}")
}
