package deploytest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	kedav1alpha1 "github.com/kedacore/keda/v2/apis/keda/v1alpha1"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kustomizetypes "sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/yaml"
)

// deployDir is deploy/, the parent of this module.
const deployDir = ".."

// document is one YAML document of a manifest file.
type document struct {
	file  string // path relative to deploy/
	index int    // 0-based position in the file
	data  []byte
	meta  metav1.TypeMeta
}

func (d document) String() string {
	return fmt.Sprintf("%s#%d (%s %s)", d.file, d.index, d.meta.APIVersion, d.meta.Kind)
}

// manifestFiles lists every .yaml/.yml file under deploy/, outside this
// test module and the Helm chart (templates, not manifests: deploy/charttest
// renders and checks them).
func manifestFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(deployDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		// Test fixtures of other projects (deploy/kubee2e/testdata: the
		// InferencePool CRD) are not deploy's manifests.
		if d.IsDir() && (p == filepath.Join(deployDir, "test") || p == filepath.Join(deployDir, "chart") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if !d.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no manifests under deploy/")
	}
	return files
}

// readDocuments splits a (multi-document) YAML file.
func readDocuments(t *testing.T, path string) []document {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return splitDocuments(t, path, b)
}

func splitDocuments(t *testing.T, name string, b []byte) []document {
	t.Helper()
	rel, _ := filepath.Rel(deployDir, name)
	if rel == "" || strings.HasPrefix(rel, "..") {
		rel = name
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(b)))
	var docs []document
	for i := 0; ; i++ {
		data, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s: %v", rel, err)
		}
		if len(bytes.TrimSpace(stripComments(data))) == 0 {
			continue
		}
		d := document{file: rel, index: i, data: data}
		if err := yaml.Unmarshal(data, &d.meta); err != nil {
			t.Fatalf("%s: %v", d, err)
		}
		docs = append(docs, d)
	}
	return docs
}

func stripComments(b []byte) []byte {
	var out []byte
	for _, line := range bytes.Split(b, []byte("\n")) {
		if !bytes.HasPrefix(bytes.TrimSpace(line), []byte("#")) {
			out = append(out, line...)
			out = append(out, '\n')
		}
	}
	return out
}

// newObject returns an empty value of the Go type that owns apiVersion/kind,
// or nil when no type is known (a failure: every shipped kind must be
// checked).
func newObject(m metav1.TypeMeta) any {
	switch m.APIVersion + " " + m.Kind {
	case "v1 Namespace":
		return &corev1.Namespace{}
	case "v1 ConfigMap":
		return &corev1.ConfigMap{}
	case "v1 Service":
		return &corev1.Service{}
	case "apps/v1 Deployment":
		return &appsv1.Deployment{}
	case "autoscaling/v2 HorizontalPodAutoscaler":
		return &autoscalingv2.HorizontalPodAutoscaler{}
	case "keda.sh/v1alpha1 ScaledObject":
		return &kedav1alpha1.ScaledObject{}
	case "http.keda.sh/v1beta1 InterceptorRoute":
		return &InterceptorRoute{}
	case "monitoring.coreos.com/v1 ServiceMonitor":
		return &monitoringv1.ServiceMonitor{}
	case "monitoring.coreos.com/v1 PodMonitor":
		return &monitoringv1.PodMonitor{}
	case "monitoring.coreos.com/v1 PrometheusRule":
		return &monitoringv1.PrometheusRule{}
	case "v1 ServiceAccount":
		return &corev1.ServiceAccount{}
	case "rbac.authorization.k8s.io/v1 Role":
		return &rbacv1.Role{}
	case "rbac.authorization.k8s.io/v1 RoleBinding":
		return &rbacv1.RoleBinding{}
	case "rbac.authorization.k8s.io/v1 ClusterRole":
		return &rbacv1.ClusterRole{}
	case "rbac.authorization.k8s.io/v1 ClusterRoleBinding":
		return &rbacv1.ClusterRoleBinding{}
	case "kustomize.config.k8s.io/v1beta1 Kustomization":
		return &kustomizetypes.Kustomization{}
	}
	return nil
}

// decodeStrict decodes d into its owner's Go type, rejecting unknown and
// duplicate fields.
func decodeStrict(d document) (any, error) {
	obj := newObject(d.meta)
	if obj == nil {
		return nil, fmt.Errorf("no Go type known for apiVersion %q kind %q", d.meta.APIVersion, d.meta.Kind)
	}
	if err := yaml.UnmarshalStrict(d.data, obj); err != nil {
		return nil, err
	}
	return obj, nil
}

// objectsOf decodes every document of every manifest and returns those of
// type T, with the document each came from.
func objectsOf[T any](t *testing.T) map[string]T {
	t.Helper()
	out := map[string]T{}
	for _, f := range manifestFiles(t) {
		for _, d := range readDocuments(t, f) {
			obj, err := decodeStrict(d)
			if err != nil {
				t.Fatalf("%s: %v", d, err)
			}
			if v, ok := obj.(T); ok {
				out[d.String()] = v
			}
		}
	}
	return out
}
