package deploytest

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/cog/plugins"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// TestDashboardsDecodeStrictly decodes every dashboard under dashboards/
// with grafana-foundation-sdk's strict decoder (unknown fields, wrong types
// and missing required fields are errors; panel options and queries decode
// through the SDK's panel and datasource plugins) and runs its Validate.
// The PromQL inside is checked by dashboards/dashboards_test.go.
func TestDashboardsDecodeStrictly(t *testing.T) {
	plugins.RegisterDefaultPlugins()
	files, _ := filepath.Glob(filepath.Join("..", "..", "dashboards", "*.json"))
	if len(files) == 0 {
		t.Fatal("no dashboards under dashboards/")
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d dashboard.Dashboard
		if err := sdkError(d.UnmarshalJSONStrict(b)); err != nil {
			t.Errorf("%s: strict decode: %v", f, err)
			continue
		}
		if err := sdkError(d.Validate()); err != nil {
			t.Errorf("%s: validate: %v", f, err)
		}
		if len(d.Panels) == 0 {
			t.Errorf("%s: no panels decoded", f)
		}
	}
}

// sdkError turns the SDK's empty cog.BuildErrors (a typed nil returned as a
// non-nil error) into nil.
func sdkError(err error) error {
	if be, ok := err.(cog.BuildErrors); ok && len(be) == 0 {
		return nil
	}
	return err
}
