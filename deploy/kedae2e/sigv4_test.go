package kedae2e

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	"github.com/kedacore/keda/v2/pkg/scalers"
	"github.com/kedacore/keda/v2/pkg/scalers/scalersconfig"
)

// TestKEDASigV4Region runs KEDA's own prometheus scaler against a fake
// Amazon Managed Prometheus (an httptest server recording the request's
// Authorization) with the identities the chart's SigV4 check knows
// (templates/_helpers.tpl, infscale.kedaServerAddress), AWS keys from the
// environment standing in for the role. It signs for service aps in the
// region given either in the trigger's metadata (awsRegion) or in its
// TriggerAuthentication's parameters (its authParams: a secretTargetRef
// or configMapTargetRef with parameter awsRegion), so a chart whose
// keda.authenticationRef names such a TriggerAuthentication needs no
// keda.metadata.awsRegion; with identityOwner: operator and no
// TriggerAuthentication the region can only be the metadata's; with
// neither identity the query goes unsigned.
func TestKEDASigV4Region(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_REGION", "")
	t.Setenv("AWS_DEFAULT_REGION", "")
	var mu sync.Mutex
	var auth string
	amp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auth = r.Header.Get("Authorization")
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1767225600,"3"]}]}}`))
	}))
	defer amp.Close()
	for i, c := range []struct {
		name     string
		meta     map[string]string
		params   map[string]string
		identity kedav1alpha1.PodIdentityProvider
		want     string // the Authorization's credential scope; "" unsigned
	}{
		{"region in the TriggerAuthentication", nil, map[string]string{"awsRegion": "eu-west-1"}, kedav1alpha1.PodIdentityProviderAws, "/eu-west-1/aps/aws4_request"},
		{"region in the metadata", map[string]string{"awsRegion": "eu-west-1"}, nil, kedav1alpha1.PodIdentityProviderAws, "/eu-west-1/aps/aws4_request"},
		{"operator's identity", map[string]string{"awsRegion": "us-east-2", "identityOwner": "operator"}, nil, "", "/us-east-2/aps/aws4_request"},
		{"no identity", map[string]string{"awsRegion": "eu-west-1"}, nil, "", ""},
	} {
		meta := map[string]string{"serverAddress": amp.URL, "query": `max(infscale_desired_replicas{target="chat"})`, "threshold": "1", "ignoreNullValues": "false"}
		for k, v := range c.meta {
			meta[k] = v
		}
		s, err := scalers.NewPrometheusScaler(&scalersconfig.ScalerConfig{
			TriggerMetadata: meta, AuthParams: c.params, PodIdentity: kedav1alpha1.AuthPodIdentity{Provider: c.identity},
			MetricType: "AverageValue", GlobalHTTPTimeout: 5 * time.Second, TriggerType: "prometheus",
			ScalableObjectName: "chat", ScalableObjectNamespace: "llm", ScalableObjectType: "ScaledObject",
			TriggerUniqueKey: "llm/chat/" + string(rune('a'+i)),
		})
		if err != nil {
			t.Fatalf("%s: NewPrometheusScaler: %v", c.name, err)
		}
		if _, _, err := s.GetMetricsAndActivity(context.Background(), "s0-prometheus"); err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
		_ = s.Close(context.Background())
		mu.Lock()
		got := auth
		mu.Unlock()
		switch {
		case c.want == "" && got != "":
			t.Errorf("%s: Authorization %q, want the query unsigned", c.name, got)
		case c.want != "" && (!strings.HasPrefix(got, "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/") || !strings.Contains(got, c.want)):
			t.Errorf("%s: Authorization %q, want SigV4 with scope ...%s", c.name, got, c.want)
		}
	}
}
