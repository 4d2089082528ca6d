package serve

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/kube"
	"github.com/infscale/infscale/pkg/kube/kubefake"
)

// TestReloadSourceNotApplied: a reload that gives a target a scaleTargetRef
// while no Kubernetes client can be made applies the targets but not the
// source (no applier): that reload was not applied as written, so
// infscale_config_last_reload_successful is 0 and it counts as a failure
// (it read 1 and success, so InfscaleConfigReloadFailed stayed quiet). The
// same file reloaded once the client can be made is applied: 1, and the
// client asked for again (it was not: the file's scaleTargetRef matched
// the one taken as running, so the source stayed without an applier).
func TestReloadSourceNotApplied(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "serve.yaml")
	if err := os.WriteFile(path, []byte("interval: 1s\n"+loopConfig), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	c, _, _ := kubefake.New("default")
	t.Cleanup(c.Close)
	var calls atomic.Int32
	cluster := func() (*kube.Cluster, error) {
		if calls.Add(1) == 1 {
			return nil, errors.New("no cluster here")
		}
		return c, nil
	}
	src := &fakeSource{}
	src.set("chat", load(1, 50, 10))
	src.set("other", load(1, 5, 0))
	reload := make(chan os.Signal, 1)
	base, cancel, done := startRun(t, cfg, Options{ConfigPath: path, Source: src, Version: "test", Reload: reload, Cluster: cluster})
	defer func() { cancel(); <-done }()

	withRef := "interval: 1s\nnamespace: llm\n" + strings.Replace(loopConfig, "- name: chat\n", "- name: chat\n  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat}\n", 1)
	if err := os.WriteFile(path, []byte(withRef), 0o644); err != nil {
		t.Fatal(err)
	}
	reloads := func(result string, n int, ok int) func() bool {
		return func() bool {
			_, body := get(t, base+"/metrics")
			return strings.Contains(body, `infscale_config_reloads_total{result="`+result+`"} `+string(rune('0'+n))) &&
				strings.Contains(body, "infscale_config_last_reload_successful "+string(rune('0'+ok)))
		}
	}
	reload <- os.Interrupt
	waitFor(t, "the reload without its client counted as failed, the gauge at 0", reloads("failure", 1, 0))
	reload <- os.Interrupt
	waitFor(t, "the same file reloaded with a client applied, the gauge at 1", reloads("success", 1, 1))
	if n := calls.Load(); n != 2 {
		t.Errorf("the client was asked for %d times, want 2 (once per reload)", n)
	}
}
