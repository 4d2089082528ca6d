package deploytest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// TestStrictDecode decodes every YAML document under deploy/ into the Go type
// of the project that owns its kind; an unknown field, a misspelt one, a
// wrong type or a kind with no known type fails.
func TestStrictDecode(t *testing.T) {
	n := 0
	for _, f := range manifestFiles(t) {
		for _, d := range readDocuments(t, f) {
			n++
			if _, err := decodeStrict(d); err != nil {
				t.Errorf("%s: %v", d, err)
			}
		}
	}
	t.Logf("%d documents decoded strictly", n)
}

// TestStrictDecodeRejectsUnknownField shows the check bites: a misspelt
// field (stabilisationWindowSeconds, British spelling) in a ScaledObject's
// HPA behavior is an error, not silently dropped as the API server's
// non-strict decoding would.
func TestStrictDecodeRejectsUnknownField(t *testing.T) {
	doc := splitDocuments(t, "inline.yaml", []byte(`apiVersion: keda.sh/v1alpha1
kind: ScaledObject
metadata: {name: x}
spec:
  scaleTargetRef: {name: x}
  triggers: [{type: prometheus, metadata: {query: "1", threshold: "1", serverAddress: "http://p"}}]
  advanced:
    horizontalPodAutoscalerConfig:
      behavior:
        scaleDown: {stabilisationWindowSeconds: 0}
`))[0]
	_, err := decodeStrict(doc)
	if err == nil || !strings.Contains(err.Error(), "stabilisationWindowSeconds") {
		t.Fatalf("want an unknown-field error naming stabilisationWindowSeconds, got %v", err)
	}
}

// TestKustomizeBuild builds every kustomization under deploy/ with
// kustomize's own library (what `kubectl apply -k` runs) and decodes its
// output strictly as well.
func TestKustomizeBuild(t *testing.T) {
	dirs := kustomizationDirs(t)
	if len(dirs) == 0 {
		t.Fatal("no kustomization.yaml under deploy/")
	}
	for _, dir := range dirs {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			abs, err := filepath.Abs(dir)
			if err != nil {
				t.Fatal(err)
			}
			k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
			m, err := k.Run(filesys.MakeFsOnDisk(), abs)
			if err != nil {
				t.Fatalf("kustomize build %s: %v", dir, err)
			}
			out, err := m.AsYaml()
			if err != nil {
				t.Fatal(err)
			}
			docs := splitDocuments(t, "build:"+filepath.Base(dir), out)
			if len(docs) == 0 {
				t.Fatalf("kustomize build %s: no objects", dir)
			}
			for _, d := range docs {
				if _, err := decodeStrict(d); err != nil {
					t.Errorf("%s: %v", d, err)
				}
			}
		})
	}
}

func kustomizationDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	for _, f := range manifestFiles(t) {
		if filepath.Base(f) == "kustomization.yaml" {
			dirs = append(dirs, filepath.Dir(f))
		}
	}
	if _, err := os.Stat(filepath.Join(deployDir, "base", "kustomization.yaml")); err != nil {
		t.Fatalf("deploy/base has no kustomization.yaml: %v", err)
	}
	return dirs
}
