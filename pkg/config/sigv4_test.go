package config

import (
	"strings"
	"testing"
)

// TestSigV4Keys: prometheus.sigv4 reads remote_write's sigv4 keys of
// prometheus.yml, key for key.
func TestSigV4Keys(t *testing.T) {
	cfg := mustParse(t, `prometheus:
  url: https://aps-workspaces.eu-west-1.amazonaws.com/workspaces/ws-1
  sigv4:
    region: eu-west-1
    access_key: AKID
    secret_key: SECRET
    profile: prod
    role_arn: arn:aws:iam::123456789012:role/infscale
    use_fips_sts_endpoint: true
    service_name: aps
targets: [{name: a, selector: '{a="b"}', metrics: [{type: queue, target: 1}], maxReplicaCount: 2}]
`)
	s := cfg.Prometheus.SigV4
	if s == nil {
		t.Fatal("sigv4: nil, want the block")
	}
	if s.Region != "eu-west-1" || s.AccessKey != "AKID" || string(s.SecretKey) != "SECRET" || s.Profile != "prod" ||
		s.RoleARN != "arn:aws:iam::123456789012:role/infscale" || !s.UseFIPSSTSEndpoint || s.ServiceName != "aps" {
		t.Errorf("sigv4: %+v", *s)
	}
	if cfg := mustParse(t, "prometheus: {url: http://p:9090}\ntargets: [{name: a, selector: '{a=\"b\"}', metrics: [{type: queue, target: 1}], maxReplicaCount: 2}]\n"); cfg.Prometheus.SigV4 != nil {
		t.Errorf("no sigv4 key: %+v, want nil (unsigned)", *cfg.Prometheus.SigV4)
	}
}

// TestSigV4Errors: what Prometheus refuses in remote_write's sigv4 is
// refused at its file:line:col, and sigv4 without prometheus.url.
func TestSigV4Errors(t *testing.T) {
	const tg = "targets: [{name: a, selector: '{a=\"b\"}', metrics: [{type: queue, target: 1}], maxReplicaCount: 2}]\n"
	for _, c := range []struct{ prom, want string }{
		// 5:11: a block mapping is placed at its first key's colon (goccy's
		// position of the mapping), here region's.
		{"  url: http://p:9090\n  basic_auth: {username: u, password: p}\n  sigv4:\n    region: us-east-1\n",
			"s.yaml:5:11: prometheus.sigv4: at most one of basic_auth, authorization, oauth2 and sigv4 may be given (each sets the Authorization header), got sigv4 and basic_auth"},
		{"  url: http://p:9090\n  authorization: {credentials: t}\n  oauth2: {client_id: c, client_secret: s, token_url: http://t}\n  sigv4: {region: us-east-1}\n",
			"s.yaml:2:6: prometheus: at most one of basic_auth, oauth2 & authorization must be configured"}, // promconfig's own rule runs first
		{"  url: http://p:9090\n  oauth2: {client_id: c, client_secret: s, token_url: http://t}\n  sigv4: {region: us-east-1}\n",
			"s.yaml:4:10: prometheus.sigv4: at most one of basic_auth, authorization, oauth2 and sigv4 may be given (each sets the Authorization header), got sigv4 and oauth2"},
		{"  url: http://p:9090\n  sigv4: {region: us-east-1, access_key: AKID}\n",
			"s.yaml:3:10: prometheus.sigv4: must provide a AWS SigV4 Access key and Secret Key"},
		{"  url: http://p:9090\n  sigv4: {external_id: x}\n",
			"s.yaml:3:10: prometheus.sigv4: external_id can only be used with role_arn"},
		{"  url: http://p:9090\n  sigv4:\n    regoin: us-east-1\n",
			"s.yaml:4:5: prometheus.sigv4.regoin: unknown key"},
		{"  sigv4: {region: us-east-1}\n",
			"s.yaml:2:10: prometheus.sigv4: signs the queries to prometheus.url, and there is none"},
	} {
		y := "prometheus:\n" + c.prom + tg
		if !strings.Contains(c.prom, "url:") { // embedded mode: scrape the pods
			y = "prometheus:\n" + c.prom + strings.Replace(tg, "selector: '{a=\"b\"}'", "scrape: ['http://127.0.0.1:1/metrics']", 1)
		}
		_, err := Parse([]byte(y), "s.yaml")
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.prom, err, c.want)
		}
	}
}
