package deploytest

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/recommend"
	"github.com/infscale/infscale/pkg/serve"
)

// failingSource reads target chat as knownSource does and every other
// target as a failed read (Prometheus refused): no decision for it.
type failingSource struct{}

func (failingSource) Name() string { return "prometheus" }

func (failingSource) Read(ctx context.Context, targets []*config.Target, now time.Time) []serve.Reading {
	out := knownSource{}.Read(ctx, targets, now)
	for i, tg := range targets {
		if tg.Name != "chat" {
			out[i] = serve.Reading{Obs: recommend.Unknown(), Errors: []serve.ReadError{
				{Signal: "running", Reason: "unavailable", Err: errors.New("connection refused")}}}
		}
	}
	return out
}

// TestTargetVariableListsUndecided: the dashboards' target variable
// (label_values(METRIC, target)) lists every target serve runs, also one
// that has not decided since serve started (its reads fail: the alert
// InfscaleNoDecision). Its panels (Query errors) are the ones to look at
// then; a variable read from infscale_desired_replicas, which such a
// target does not have, left it out of the list and of "All".
func TestTargetVariableListsUndecided(t *testing.T) {
	cfg, err := config.Parse([]byte(`
prometheus: {url: 'http://prometheus:9090'}
targets:
- name: chat
  server: vllm
  selector: '{namespace="llm", app="chat"}'
  metrics: [{type: queue, target: 8}]
  maxReplicaCount: 4
- name: failing
  server: vllm
  selector: '{namespace="llm", app="failing"}'
  metrics: [{type: queue, target: 8}]
  maxReplicaCount: 4
`), "variable.yaml")
	if err != nil {
		t.Fatal(err)
	}
	addr := startServe(t, cfg, failingSource{})
	// The page once chat has decided (and failing's read has failed).
	var page string
	for deadline := time.Now().Add(30 * time.Second); ; {
		if resp, err := http.Get("http://" + addr + "/metrics"); err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			page = string(b)
			if strings.Contains(page, `infscale_desired_replicas{target="chat"}`) && strings.Contains(page, `infscale_query_errors_total{reason="unavailable",target="failing"}`) {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("serve's page after 30 s has no decision for chat or no error for failing:\n%s", page)
		}
		time.Sleep(50 * time.Millisecond)
	}
	files, _ := filepath.Glob(filepath.Join("..", "..", "dashboards", "*.json"))
	if len(files) == 0 {
		t.Fatal("no dashboards under dashboards/")
	}
	query := regexp.MustCompile(`^label_values\((\w+)(\{[^}]*\})?,\s*target\)$`)
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var d struct {
			Templating struct {
				List []struct {
					Name  string          `json:"name"`
					Query json.RawMessage `json:"query"`
				} `json:"list"`
			} `json:"templating"`
		}
		if err := json.Unmarshal(b, &d); err != nil {
			t.Fatal(err)
		}
		for _, v := range d.Templating.List {
			if v.Name != "target" {
				continue
			}
			var q struct {
				Query string `json:"query"`
			}
			if json.Unmarshal(v.Query, &q) != nil {
				_ = json.Unmarshal(v.Query, &q.Query)
			}
			m := query.FindStringSubmatch(q.Query)
			if m == nil || m[2] != "" {
				t.Errorf("%s: target variable %q: want label_values(<metric>, target)", f, q.Query)
				continue
			}
			for _, tg := range []string{"chat", "failing"} {
				if !regexp.MustCompile(`(?m)^` + m[1] + `\{[^}]*target="` + tg + `"`).MatchString(page) {
					t.Errorf("%s: target variable %s lists no %s: serve exports no %s series for it", f, q.Query, tg, m[1])
				}
			}
		}
	}
}
