package deploytest

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// HTTPScaledObject is the KEDA HTTP add-on's resource (http.keda.sh/v1alpha1),
// copied field for field from kedacore/http-add-on
// operator/apis/http/v1alpha1/httpscaledobject_types.go (spec fields only;
// the module github.com/kedacore/http-add-on is not served by the module
// proxy here). Status is omitted: shipped manifests have none, and strict
// decoding rejects one.
type HTTPScaledObject struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec HTTPScaledObjectSpec `json:"spec,omitempty"`
}

// HTTPScaledObjectSpec mirrors the add-on's HTTPScaledObjectSpec.
type HTTPScaledObjectSpec struct {
	Hosts                       []string                      `json:"hosts,omitempty"`
	PathPrefixes                []string                      `json:"pathPrefixes,omitempty"`
	Headers                     []HTTPHeader                  `json:"headers,omitempty"`
	ScaleTargetRef              HTTPScaleTargetRef            `json:"scaleTargetRef"`
	ColdStartTimeoutFailoverRef *ColdStartTimeoutFailoverRef  `json:"coldStartTimeoutFailoverRef,omitempty"`
	Replicas                    *HTTPReplicas                 `json:"replicas,omitempty"`
	TargetPendingRequests       *int32                        `json:"targetPendingRequests,omitempty"`
	CooldownPeriod              *int32                        `json:"scaledownPeriod,omitempty"`
	InitialCooldownPeriod       *int32                        `json:"initialCooldownPeriod,omitempty"`
	ScalingMetric               *HTTPScalingMetric            `json:"scalingMetric,omitempty"`
	Timeouts                    *HTTPScaledObjectTimeoutsSpec `json:"timeouts,omitempty"`
}

// HTTPHeader mirrors the add-on's Header.
type HTTPHeader struct {
	Name  string  `json:"name"`
	Value *string `json:"value,omitempty"`
}

// HTTPScaleTargetRef mirrors the add-on's ScaleTargetRef.
type HTTPScaleTargetRef struct {
	Name       string `json:"name"`
	APIVersion string `json:"apiVersion,omitempty"`
	Kind       string `json:"kind,omitempty"`
	Service    string `json:"service"`
	Port       int32  `json:"port,omitempty"`
	PortName   string `json:"portName,omitempty"`
}

// ColdStartTimeoutFailoverRef mirrors the add-on's type of the same name.
type ColdStartTimeoutFailoverRef struct {
	Service        string `json:"service"`
	Port           int32  `json:"port,omitempty"`
	PortName       string `json:"portName,omitempty"`
	TimeoutSeconds int32  `json:"timeoutSeconds,omitempty"`
}

// HTTPReplicas mirrors the add-on's ReplicaStruct.
type HTTPReplicas struct {
	Min *int32 `json:"min,omitempty"`
	Max *int32 `json:"max,omitempty"`
}

// HTTPScalingMetric mirrors the add-on's ScalingMetricSpec.
type HTTPScalingMetric struct {
	Concurrency *struct {
		TargetValue int `json:"targetValue"`
	} `json:"concurrency,omitempty"`
	Rate *struct {
		TargetValue int             `json:"targetValue"`
		Window      metav1.Duration `json:"window"`
		Granularity metav1.Duration `json:"granularity"`
	} `json:"requestRate,omitempty"`
}

// HTTPScaledObjectTimeoutsSpec mirrors the add-on's type of the same name.
type HTTPScaledObjectTimeoutsSpec struct {
	ConditionWait  metav1.Duration `json:"conditionWait"`
	ResponseHeader metav1.Duration `json:"responseHeader"`
}
