package kube

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/rest"
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

// TestNewClusterContactsNothing: building the clients makes no request (an
// unreachable server is fine until first use) and sets the rate limit and
// user agent.
func TestNewClusterContactsNothing(t *testing.T) {
	c, err := NewCluster(&rest.Config{Host: "http://127.0.0.1:1"}, "llm")
	if err != nil {
		t.Fatal(err)
	}
	if c.Namespace != "llm" || c.Config.QPS != 50 || c.Config.Burst != 100 || c.Config.UserAgent != "infscale" {
		t.Errorf("namespace %q qps %v burst %d agent %q; want llm, 50, 100, infscale", c.Namespace, c.Config.QPS, c.Config.Burst, c.Config.UserAgent)
	}
	if c.Config.NegotiatedSerializer != nil {
		t.Error("the scale client wrote its serializer into the Cluster's configuration")
	}
}

// TestRESTConfigNotAKubeconfig: a file that is YAML but not a kubeconfig
// (--kubeconfig pointed at serve's own config, say), and no configuration
// at all, said "no configuration has been provided, try setting
// KUBERNETES_MASTER environment variable": a variable client-go does not
// read. Now: the file named, what it lacks, and for the default path that
// ~/.kube/config does not exist.
func TestRESTConfigNotAKubeconfig(t *testing.T) {
	path := filepath.Join(t.TempDir(), "serve.yaml")
	if err := os.WriteFile(path, []byte("targets:\n- name: chat\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := RESTConfig(path)
	var ce *ConfigError
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "kubeconfig "+path+": no cluster, user or current-context: not a kubeconfig") || strings.Contains(err.Error(), "KUBERNETES_MASTER") {
		t.Errorf("serve's config as --kubeconfig: %v", err)
	}
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBECONFIG", "")
	t.Setenv("KUBERNETES_SERVICE_HOST", "") // not in a cluster
	_, err = RESTConfig("")
	if !errors.As(err, &ce) || !strings.Contains(err.Error(), "and no kubeconfig: ~/.kube/config does not exist; pass --kubeconfig") || strings.Contains(err.Error(), "KUBERNETES_MASTER") {
		t.Errorf("no configuration anywhere: %v", err)
	}
}

// TestRESTConfigBadServerURL: a kubeconfig whose cluster server has a
// scheme client-go cannot speak ("htp://", a typo) or no host is the
// file's fault, a *ConfigError naming it and the URL (exit 2), not a
// discovery failure at the first request (exit 1, "unsupported protocol
// scheme"). https://, http:// and a bare host:port are accepted.
func TestRESTConfigBadServerURL(t *testing.T) {
	for server, want := range map[string]string{
		"htp://api.example:6443":  `cluster server "htp://api.example:6443": scheme "htp", want https:// (or http://)`,
		"https://":                `cluster server "https://": no host`,
		"https://api.example:443": "",
		"http://127.0.0.1:8080":   "",
		"api.example:6443":        "",
	} {
		path := filepath.Join(t.TempDir(), "kubeconfig")
		kc := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: \"" + server + "\"}}]\ncontexts: [{name: c, context: {cluster: c}}]\ncurrent-context: c\n"
		if err := os.WriteFile(path, []byte(kc), 0o600); err != nil {
			t.Fatal(err)
		}
		_, err := RESTConfig(path)
		var ce *ConfigError
		switch {
		case want == "" && err != nil:
			t.Errorf("server %q: %v, want accepted", server, err)
		case want != "" && (!errors.As(err, &ce) || !strings.Contains(err.Error(), "kubeconfig "+path+": "+want)):
			t.Errorf("server %q: %v, want a ConfigError %q", server, err, want)
		}
	}
}
