package deploytest

// AdapterConfig is prometheus-adapter's configuration file, copied field for
// field from kubernetes-sigs/prometheus-adapter pkg/config/config.go
// (MetricsDiscoveryConfig; the module sigs.k8s.io/prometheus-adapter is not
// served by the module proxy here). The adapter decodes it with
// yaml.UnmarshalStrict; the test decodes it as strictly.
type AdapterConfig struct {
	Rules         []AdapterRule `json:"rules"`
	ResourceRules any           `json:"resourceRules,omitempty"`
	ExternalRules []AdapterRule `json:"externalRules,omitempty"`
}

// AdapterRule mirrors the adapter's DiscoveryRule.
type AdapterRule struct {
	SeriesQuery            string                    `json:"seriesQuery"`
	SeriesFilters          []AdapterRegexFilter      `json:"seriesFilters"`
	Resources              AdapterResourceMapping    `json:"resources"`
	Name                   AdapterNameMapping        `json:"name"`
	MetricsQuery           string                    `json:"metricsQuery,omitempty"`
	LabelValueReplacements []AdapterValueReplacement `json:"labelValueReplacements,omitempty"`
}

// AdapterValueReplacement mirrors the adapter's LabelValueReplacement.
type AdapterValueReplacement struct {
	Find    string `json:"find,omitempty"`
	Replace string `json:"replace,omitempty"`
}

// AdapterRegexFilter mirrors the adapter's RegexFilter.
type AdapterRegexFilter struct {
	Is    string `json:"is,omitempty"`
	IsNot string `json:"isNot,omitempty"`
}

// AdapterResourceMapping mirrors the adapter's ResourceMapping, including
// `namespaced` (docs/externalmetrics.md: false keeps the HPA's namespace
// out of an external query).
type AdapterResourceMapping struct {
	Template   string                          `json:"template,omitempty"`
	Overrides  map[string]AdapterGroupResource `json:"overrides,omitempty"`
	Namespaced *bool                           `json:"namespaced,omitempty"`
}

// AdapterGroupResource mirrors the adapter's GroupResource.
type AdapterGroupResource struct {
	Group    string `json:"group,omitempty"`
	Resource string `json:"resource"`
}

// AdapterNameMapping mirrors the adapter's NameMapping.
type AdapterNameMapping struct {
	Matches string `json:"matches"`
	As      string `json:"as"`
}
