package kube

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRESTConfigFromKubeconfig(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "config")
	const cfg = `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:6443"}
users:
- name: u
  user: {token: abc}
contexts:
- name: x
  context: {cluster: c, user: u, namespace: llm}
current-context: x
`
	if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	rc, err := RESTConfig(path)
	if err != nil {
		t.Fatal(err)
	}
	if rc.Host != "https://127.0.0.1:6443" || rc.BearerToken != "abc" {
		t.Fatalf("host %q token %q", rc.Host, rc.BearerToken)
	}
	if _, err := NewClientset(rc); err != nil {
		t.Fatal(err)
	}
}

func TestRESTConfigMissingFile(t *testing.T) {
	_, err := RESTConfig(filepath.Join(t.TempDir(), "nope"))
	if err == nil || !strings.Contains(err.Error(), "kubeconfig") {
		t.Fatalf("err %v", err)
	}
}
