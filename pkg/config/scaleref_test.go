package config

import (
	"strings"
	"testing"
)

// TestCheckScaleTargetRef: the built-in kinds with a scale subresource
// (apps/v1 Deployment, ReplicaSet, StatefulSet; v1 ReplicationController),
// any kind of another group, and the typos a user makes.
func TestCheckScaleTargetRef(t *testing.T) {
	for _, tc := range []struct{ apiVersion, kind, field, msg string }{
		{"apps/v1", "Deployment", "", ""},
		{"apps/v1", "StatefulSet", "", ""},
		{"v1", "ReplicationController", "", ""},
		{"argoproj.io/v1alpha1", "Rollout", "", ""},
		{"leaderworkerset.x-k8s.io/v1", "LeaderWorkerSet", "", ""},
		{"apps/v1", "Deploymnt", "kind", "it has Deployment, ReplicaSet, StatefulSet"},
		{"apps/v1", "deployment", "kind", "case-sensitive: Deployment"},
		{"v1", "Deployment", "apiVersion", "Deployment is in apps/v1"},
		{"apps", "Deployment", "apiVersion", "want group/version"},
		{"apps/v1beta2", "Deployment", "apiVersion", "apps/v1 only"},
		{"v2", "Deployment", "apiVersion", "core group has only v1"},
		{"apps/1", "Deployment", "apiVersion", "want group/version"},
	} {
		field, err := CheckScaleTargetRef(tc.apiVersion, tc.kind)
		if field != tc.field || (err == nil) != (tc.msg == "") || (err != nil && !strings.Contains(err.Error(), tc.msg)) {
			t.Errorf("%s %s: field %q err %v; want field %q containing %q", tc.apiVersion, tc.kind, field, err, tc.field, tc.msg)
		}
	}
}
