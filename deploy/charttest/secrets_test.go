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
	// The _file forms render.
	render(t, "prometheus: {url: 'http://prometheus:9090', basic_auth: {username: infscale, password_file: /etc/infscale-auth/password}}")
}
