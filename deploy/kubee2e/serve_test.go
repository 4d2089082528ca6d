package kubee2e

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// infscaleBin is bin/infscale built once per run from the repository
// (its own module and build list, as `make build` builds it).
var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

func infscale(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kubee2e-bin")
		if err != nil {
			buildErr = err
			return
		}
		binPath = filepath.Join(dir, "infscale")
		cmd := exec.Command("go", "build", "-C", filepath.Join("..", ".."), "-o", binPath, "./cmd/recommender")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("go build ./cmd/recommender: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// kubeconfig writes a kubeconfig file for the test API server's loopback
// credentials (a bearer token, the server's own CA), or for token when
// c.token is set.
func (c *cluster) kubeconfig(t *testing.T) string {
	t.Helper()
	token := c.config.BearerToken
	if c.token != "" {
		token = c.token
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: c.config.Host, CertificateAuthorityData: c.config.CAData, TLSServerName: c.config.ServerName}
	cfg.AuthInfos["e2e"] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "e2e", Namespace: "default"}
	cfg.CurrentContext = "e2e"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// record is the part of serve's audit line (one JSON object per decision)
// the tests read.
type record struct {
	Target     string   `json:"target"`
	Desired    int      `json:"desired"`
	Observed   *int     `json:"observed"`
	Applied    *int     `json:"applied"`
	ApplyError string   `json:"apply_error"`
	Errors     []string `json:"errors"`
	Signals    struct {
		Queue *float64 `json:"queue"`
	} `json:"signals"`
}

// server is one `infscale serve` process.
type server struct {
	cmd    *exec.Cmd
	audit  string
	stderr *bytes.Buffer
	mu     *sync.Mutex
}

type lockedBuffer struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

// startServe runs bin/infscale serve with the config text on the test API
// server (--kubeconfig), an audit log and the extra flags, on a loopback
// port; SIGTERM at the end of the test (or by stop).
func (c *cluster) startServe(t *testing.T, config string, flags ...string) *server {
	t.Helper()
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "serve.yaml")
	if err := os.WriteFile(cfgPath, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	s := &server{audit: filepath.Join(dir, "audit.jsonl"), stderr: &bytes.Buffer{}, mu: &sync.Mutex{}}
	args := append([]string{"serve", "--config", cfgPath, "--listen", "127.0.0.1:0", "--kubeconfig", c.kubeconfig(t), "--audit-log", s.audit}, flags...)
	s.cmd = exec.Command(infscale(t), args...)
	s.cmd.Stderr = lockedBuffer{s.mu, s.stderr}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.stop(t)
		if t.Failed() {
			t.Logf("serve %v stderr:\n%s", flags, s.log())
		}
	})
	return s
}

func (s *server) log() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// stop sends SIGTERM and waits up to 10 s (then kills).
func (s *server) stop(t *testing.T) {
	if s.cmd.ProcessState != nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-done
		t.Errorf("serve did not stop within 10 s of SIGTERM")
	}
}

// records reads the audit log so far.
func (s *server) records(t *testing.T) []record {
	t.Helper()
	f, err := os.Open(s.audit)
	if os.IsNotExist(err) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []record
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var r record
		if err := json.Unmarshal(sc.Bytes(), &r); err == nil {
			out = append(out, r)
		}
	}
	return out
}

// last is the newest record, or the zero record.
func (s *server) last(t *testing.T) record {
	rs := s.records(t)
	if len(rs) == 0 {
		return record{}
	}
	return rs[len(rs)-1]
}

func (r record) String() string {
	q, o, a := "nil", "nil", "nil"
	if r.Signals.Queue != nil {
		q = fmt.Sprint(*r.Signals.Queue)
	}
	if r.Observed != nil {
		o = fmt.Sprint(*r.Observed)
	}
	if r.Applied != nil {
		a = fmt.Sprint(*r.Applied)
	}
	return fmt.Sprintf("queue %s observed %s desired %d applied %s apply_error %q", q, o, r.Desired, a, r.ApplyError)
}

// chatConfig is serve's config for Deployment default/chat: pages scraped
// at each Ready pod's IP on port, queue (running + waiting) target 10 per
// replica, 1..10 replicas, every second, no scale-down window and no
// runaway guard (so each decision is the HPA's arithmetic on this cycle's
// pages), plus extra keys for the target.
func chatConfig(port int, extra string) string {
	return fmt.Sprintf(`pollingInterval: 1s
targets:
- name: chat
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: chat}
  namespace: default
  scrape: {port: %d, path: /metrics}
  metrics:
  - {type: queue, target: 10}
  minReplicaCount: 1
  maxReplicaCount: 10
  behavior: {scaleDown: {stabilizationWindowSeconds: 0}}
  guard: {off: true}
%s`, port, extra)
}

// waitReplicas waits until the Deployment's spec.replicas is want, showing
// the newest decision otherwise.
func (c *cluster) waitReplicas(t *testing.T, s *server, want int32) {
	t.Helper()
	eventually(t, fmt.Sprintf("spec.replicas %d", want), func() (bool, string) {
		got := c.replicas(t, "chat")
		return got == want, fmt.Sprintf("spec.replicas %d; last decision: %v", got, s.last(t))
	})
}

// waitApplied waits until serve has written spec.replicas want and its
// audit record of that write is on disk: the record follows the write, so
// spec.replicas alone can be read before the decision that set it.
func (c *cluster) waitApplied(t *testing.T, s *server, want int32) {
	t.Helper()
	c.waitReplicas(t, s, want)
	eventually(t, fmt.Sprintf("a record applying %d", want), func() (bool, string) {
		rs := s.records(t)
		for i := len(rs) - 1; i >= 0; i-- {
			if a := rs[i].Applied; a != nil {
				return int32(*a) == want, fmt.Sprintf("newest write: %v", rs[i])
			}
		}
		return false, "no write recorded"
	})
}

// TestServeDiscoversPodsAndApplies: serve (bin/infscale, apply: true)
// reads spec.replicas from the scale subresource, scrapes the Deployment's
// Ready pods as they come and go, and writes each decision. The test plays
// the ReplicaSet (it creates and deletes the pods) and the kubelet (pod IP,
// Ready). By hand, HPA arithmetic for an AverageValue target of 10 per
// replica, desired = ceil(current x (sum/current)/10) = ceil(sum/10):
//
//   - 2 Ready pods at 20 each (sum 40, spec 2): 4;
//   - 4 pods at 5 each (sum 20, spec 4): 2; a pod not yet Ready is not
//     scraped (its page says 100);
//   - 2 pods deleted, the 2 left at 5 (sum 10, spec 2): 1; the deleted pods'
//     servers still answer 5 and must not be read.
func TestServeDiscoversPodsAndApplies(t *testing.T) {
	c := startCluster(t)
	f, reps := c.busyPair(t)
	a, b := reps[0], reps[1]
	s := c.startServe(t, chatConfig(f.Port, "  apply: true\n"))

	c.waitApplied(t, s, 4)
	if r := s.last(t); r.Signals.Queue == nil || *r.Signals.Queue != 40 {
		t.Fatalf("decision %v, want queue 40 read from the two pods", r)
	}

	// The ReplicaSet adds two pods; a fifth is starting (IP, not Ready).
	for _, r := range []*replica{a, b} {
		r.Set(4, 1)
	}
	cc, d, e := f.Start(t, 4, 1), f.Start(t, 4, 1), f.Start(t, 90, 10)
	c.createPod(t, "chat", "chat-c", f.Port, cc.IP, true)
	c.createPod(t, "chat", "chat-d", f.Port, d.IP, true)
	c.createPod(t, "chat", "chat-e", f.Port, e.IP, false)
	c.waitReplicas(t, s, 2)
	if cc.hits.Load() == 0 || d.hits.Load() == 0 {
		t.Fatalf("new Ready pods not scraped (hits %d, %d)", cc.hits.Load(), d.hits.Load())
	}
	if e.hits.Load() != 0 {
		t.Fatalf("the pod not Ready was scraped %d times", e.hits.Load())
	}

	// The ReplicaSet removes two pods (and the one starting).
	for _, p := range []string{"chat-c", "chat-d", "chat-e"} {
		c.deletePod(t, p)
	}
	c.waitApplied(t, s, 1)
	if r := s.last(t); r.Signals.Queue == nil || *r.Signals.Queue != 10 {
		t.Fatalf("decision %v, want queue 10 from the two pods left", r)
	}
}

// TestServeRefusesUnderHPA: with an HPA on the Deployment serve decides
// but writes nothing, and says which HPA in the decision's apply_error;
// once the HPA is deleted it applies.
func TestServeRefusesUnderHPA(t *testing.T) {
	c := startCluster(t)
	f, _ := c.busyPair(t)
	c.createHPA(t, "chat-hpa", nil)
	s := c.startServe(t, chatConfig(f.Port, "  apply: true\n"))

	eventually(t, "three refused decisions", func() (bool, string) {
		n := 0
		for _, r := range s.records(t) {
			if r.Desired == 4 && strings.Contains(r.ApplyError, "HorizontalPodAutoscaler chat-hpa") {
				n++
			}
		}
		return n >= 3, s.last(t).String()
	})
	if got := c.replicas(t, "chat"); got != 2 {
		t.Fatalf("spec.replicas %d under an HPA, want 2 untouched", got)
	}
	if !strings.Contains(s.log(), "replicas not applied") {
		t.Errorf("no log line for the refusal")
	}
	c.deleteHPA(t, "chat-hpa")
	c.waitReplicas(t, s, 4)
}

// TestServeRefusesUnderScaledObject: the HPA KEDA made for a ScaledObject
// (its label scaledobject.keda.sh/name) is named by its ScaledObject.
func TestServeRefusesUnderScaledObject(t *testing.T) {
	c := startCluster(t)
	f, _ := c.busyPair(t)
	c.createHPA(t, "keda-hpa-chat", map[string]string{"scaledobject.keda.sh/name": "chat"})
	s := c.startServe(t, chatConfig(f.Port, "  apply: true\n"))
	eventually(t, "a refused decision naming the ScaledObject", func() (bool, string) {
		r := s.last(t)
		return r.Desired == 4 && strings.Contains(r.ApplyError, "ScaledObject chat"), r.String()
	})
	if got := c.replicas(t, "chat"); got != 2 {
		t.Fatalf("spec.replicas %d under a ScaledObject, want 2", got)
	}
}

var _ = context.Background
