package deploytest

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// InterceptorRoute is the KEDA HTTP add-on's routing resource
// (http.keda.sh/v1beta1, add-on >= v0.14, the successor of the deprecated
// HTTPScaledObject), mirrored field for field from kedacore/http-add-on
// operator/apis/http/v1beta1/interceptorroute_types.go (spec fields only;
// the module github.com/kedacore/http-add-on is not served by the module
// proxy here). Status is omitted: shipped manifests have none, and strict
// decoding rejects one.
type InterceptorRoute struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec InterceptorRouteSpec `json:"spec,omitempty"`
}

// InterceptorRouteSpec mirrors the add-on's InterceptorRouteSpec.
type InterceptorRouteSpec struct {
	Target        RouteTarget              `json:"target"`
	ProxyMode     string                   `json:"proxyMode,omitempty"`
	ColdStart     *RouteColdStart          `json:"coldStart,omitempty"`
	Timeouts      InterceptorRouteTimeouts `json:"timeouts,omitempty"`
	Rules         []RoutingRule            `json:"rules,omitempty"`
	ScalingMetric RouteScalingMetric       `json:"scalingMetric"`
}

// RouteTarget mirrors the add-on's TargetRef: a Service and one of port or
// portName.
type RouteTarget struct {
	Service  string `json:"service"`
	Port     int32  `json:"port,omitempty"`
	PortName string `json:"portName,omitempty"`
}

// RouteColdStart mirrors the add-on's ColdStartSpec.
type RouteColdStart struct {
	Fallback *RouteTarget `json:"fallback,omitempty"`
}

// InterceptorRouteTimeouts mirrors the add-on's type of the same name.
type InterceptorRouteTimeouts struct {
	Readiness      *metav1.Duration `json:"readiness,omitempty"`
	Request        *metav1.Duration `json:"request,omitempty"`
	ResponseHeader *metav1.Duration `json:"responseHeader,omitempty"`
}

// RoutingRule mirrors the add-on's RoutingRule.
type RoutingRule struct {
	Hosts []string `json:"hosts,omitempty"`
	Paths []struct {
		Value string `json:"value"`
	} `json:"paths,omitempty"`
	Headers []struct {
		Name  string  `json:"name"`
		Value *string `json:"value,omitempty"`
	} `json:"headers,omitempty"`
}

// RouteScalingMetric mirrors the add-on's ScalingMetricSpec.
type RouteScalingMetric struct {
	Concurrency *struct {
		TargetValue int32 `json:"targetValue,omitempty"`
	} `json:"concurrency,omitempty"`
	RequestRate *struct {
		Granularity metav1.Duration `json:"granularity,omitempty"`
		TargetValue int32           `json:"targetValue,omitempty"`
		Window      metav1.Duration `json:"window,omitempty"`
	} `json:"requestRate,omitempty"`
}
