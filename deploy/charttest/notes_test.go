package charttest

import (
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
)

// renderNotes renders the chart's NOTES.txt, what `helm install` prints,
// for release and values.
func renderNotes(t *testing.T, release, values string) string {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatal(err)
	}
	over, err := chartutil.ReadValues([]byte(values))
	if err != nil {
		t.Fatal(err)
	}
	rv, err := chartutil.ToRenderValues(ch, over, chartutil.ReleaseOptions{Name: release, Namespace: "infscale", Revision: 1, IsInstall: true}, chartutil.DefaultCapabilities)
	if err != nil {
		t.Fatal(err)
	}
	files, err := engine.Render(ch, rv)
	if err != nil {
		t.Fatal(err)
	}
	notes, ok := files["infscale/templates/NOTES.txt"]
	if !ok {
		t.Fatal("no templates/NOTES.txt rendered")
	}
	return notes
}

// TestNotes: what `helm install` prints names the objects of this release
// as the templates name them, worked out by hand: release infscale in
// namespace infscale names everything infscale; release prod names it
// prod-infscale (its pods' instance label prod); the default target chat's
// ScaledObject is chat in llm; a pair's are <name>-prefill and
// <name>-decode; an apply target's workload is read with kubectl get.
// /metrics is read through a port-forward that the next line waits for
// and ends (with leases, to the Lease holder's pod): pasted as a block, the
// curl ran before the forward listened, and a second paste found port 9105
// taken. TestNotesMetricsCommands runs those lines.
func TestNotes(t *testing.T) {
	notes := renderNotes(t, "infscale", "")
	for _, want := range []string{
		"installed as infscale in namespace infscale",
		"kubectl -n infscale rollout status deployment/infscale\n",
		"kubectl -n infscale get pods -l app.kubernetes.io/name=infscale,app.kubernetes.io/instance=infscale\n",
		"kubectl -n infscale port-forward service/infscale 9105:9105 >/dev/null &\n",
		"curl -sS --retry 10 --retry-delay 1 --retry-connrefused http://127.0.0.1:9105/metrics | grep -E '^infscale_(desired_replicas|query_errors_total)'; kill $!\n",
		`(target="chat";`,
		"kubectl -n llm get scaledobject chat   # target chat: READY True, FALLBACK False\n",
		"KEDA cannot query http://prometheus-operated.monitoring.svc:9090 ",
		"kubectl -n infscale logs deployment/infscale ",
		"Alerts: none installed; prometheusRule.enabled: true",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("default NOTES.txt lacks %q:\n%s", want, notes)
		}
	}
	if strings.Contains(notes, "Lease holder") {
		t.Errorf("default NOTES.txt speaks of a Lease with no leases mode:\n%s", notes)
	}

	values := pairValues("", "[apply, leases]") + `- name: code
  apply: true
  workload: {namespace: ml, apiVersion: apps/v1, kind: StatefulSet, name: coder}
  scaledObject: {enabled: false}
  config: {server: vllm, selector: '{namespace="ml"}', metrics: [{type: queue, target: 24}], maxReplicaCount: 4}
prometheusRule: {enabled: true, namespace: monitoring}
replicas: 2
`
	notes = renderNotes(t, "prod", values)
	for _, want := range []string{
		"installed as prod-infscale in namespace infscale",
		"kubectl -n infscale port-forward service/prod-infscale 9105:9105 >/dev/null &\n",
		"app.kubernetes.io/instance=prod\n",
		`(target="chat", target="code";`,
		"only the Lease holder exports it",
		"kubectl -n infscale port-forward pod/$(kubectl -n infscale get lease prod-infscale -o jsonpath='{.spec.holderIdentity}') 9105:9105 >/dev/null &\n",
		"kubectl -n llm get scaledobject chat-prefill chat-decode   # target chat: READY True, FALLBACK False\n",
		"kubectl -n ml get statefulset coder   # target code: serve writes spec.replicas (apply)\n",
		"Alerts: the PrometheusRule prod-infscale in namespace monitoring",
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("prod NOTES.txt lacks %q:\n%s", want, notes)
		}
	}

	// A pair that serve applies itself: both roles' workloads.
	notes = renderNotes(t, "infscale", strings.Replace(pairValues("{enabled: false}", "[apply]"), "  config:\n", "  apply: true\n  config:\n", 1))
	if want := "kubectl -n llm get deployment/chat-prefill deployment/chat-decode   # target chat: serve writes spec.replicas (apply)\n"; !strings.Contains(notes, want) {
		t.Errorf("apply pair NOTES.txt lacks %q:\n%s", want, notes)
	}
	if strings.Contains(notes, "READY False") {
		t.Errorf("NOTES.txt with no ScaledObject speaks of KEDA's READY:\n%s", notes)
	}
}

// TestNotesMetricsCommands runs NOTES.txt's step-2 lines as pasted into a
// shell, default and with leases, with a kubectl standing in for the real
// one as it behaves: port-forward listens on 127.0.0.1:9105 only after
// 700 ms (it first reaches the API server and the pod), or 3 s, or fails
// at once; get lease prints the holder. The /metrics lines come out
// whenever the forward listens (a `sleep 2` before curl printed nothing
// for the 3 s one: curl -s hid its refused connection), curl's error when
// it never does (after its 10 retries, a second apart), and port 9105 is
// free after.
func TestNotesMetricsCommands(t *testing.T) {
	for _, tool := range []string{"sh", "curl", "grep"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s: %v", tool, err)
		}
	}
	if l, err := net.Listen("tcp", "127.0.0.1:9105"); err != nil {
		t.Skipf("port 9105 is taken here: %v", err)
	} else {
		l.Close()
	}
	dir := t.TempDir()
	script := "#!/bin/sh\nexec \"" + os.Args[0] + "\" -test.run='^TestNotesFakeKubectl$' -- \"$@\"\n"
	if err := os.WriteFile(filepath.Join(dir, "kubectl"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ values, after, forward, want string }{
		{"", "2. What it decides", "700ms", `infscale_desired_replicas{target="chat"} 3`},
		{"rbac: {modes: [leases]}\nreplicas: 2\n", "holderIdentity names", "700ms", "infscale_leader{pod=\"infscale-7d9f-abcde\"} 1"},
		// A forward slower than a fixed wait (an API server across a
		// VPN): the read waits for it, it guessed 2 s before.
		{"", "2. What it decides", "3s", `infscale_desired_replicas{target="chat"} 3`},
		// A forward that fails (no such Service): the read gives up,
		// saying why, and the line ends.
		{"", "2. What it decides", "fail", "Failed to connect to 127.0.0.1 port 9105"},
	} {
		notes := renderNotes(t, "infscale", c.values)
		i := strings.Index(notes, c.after)
		if i < 0 {
			t.Fatalf("%q: NOTES.txt has no %q:\n%s", c.values, c.after, notes)
		}
		lines := strings.Split(notes[i:], "\n")[1:]
		var cmds []string
		for _, l := range lines {
			if !strings.HasPrefix(l, "     ") {
				if len(cmds) > 0 {
					break
				}
				continue
			}
			cmds = append(cmds, strings.TrimSpace(l))
		}
		cmd := exec.Command("sh", "-c", strings.Join(cmds, "\n"))
		cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"), "INFSCALE_FAKE_KUBECTL=1", "INFSCALE_FAKE_FORWARD="+c.forward)
		// A forward left running holds the output open: stop waiting
		// for it once the shell is done (it ends itself after 5 s).
		cmd.WaitDelay = time.Second
		start := time.Now()
		out, _ := cmd.CombinedOutput()
		if !strings.Contains(string(out), c.want) {
			t.Errorf("%q, forward %s, pasted:\n%s\nprinted %q, want a line %s", c.values, c.forward, strings.Join(cmds, "\n"), out, c.want)
		}
		if d := time.Since(start); d > 20*time.Second {
			t.Errorf("%q, forward %s: the commands took %v", c.values, c.forward, d)
		}
		var l net.Listener
		var err error
		for range 20 { // the forward ends as kill $! reaches it
			if l, err = net.Listen("tcp", "127.0.0.1:9105"); err == nil {
				break
			}
			time.Sleep(100 * time.Millisecond)
		}
		if err != nil {
			t.Errorf("%q: port 9105 still taken after the commands: %v", c.values, err)
		} else {
			l.Close()
		}
	}
}

// TestNotesFakeKubectl is the kubectl of TestNotesMetricsCommands.
func TestNotesFakeKubectl(t *testing.T) {
	if os.Getenv("INFSCALE_FAKE_KUBECTL") == "" {
		t.Skip("run by TestNotesMetricsCommands")
	}
	args := strings.Join(flag.Args(), " ")
	switch {
	case strings.Contains(args, "get lease"):
		fmt.Print("infscale-7d9f-abcde")
	case strings.Contains(args, "port-forward") && strings.Contains(args, "9105:9105"):
		if os.Getenv("INFSCALE_FAKE_FORWARD") == "fail" {
			fmt.Fprintf(os.Stderr, "error: services \"infscale\" not found\n")
			os.Exit(1)
		}
		delay, err := time.ParseDuration(os.Getenv("INFSCALE_FAKE_FORWARD"))
		if err != nil {
			fmt.Fprintf(os.Stderr, "fake kubectl: INFSCALE_FAKE_FORWARD: %v\n", err)
			os.Exit(1)
		}
		time.Sleep(delay)
		page := "infscale_desired_replicas{target=\"chat\"} 3\n"
		if strings.Contains(args, "pod/infscale-7d9f-abcde") {
			page += "infscale_leader{pod=\"infscale-7d9f-abcde\"} 1\n"
		}
		srv := &http.Server{Addr: "127.0.0.1:9105", Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			_, _ = w.Write([]byte(page))
		})}
		time.AfterFunc(5*time.Second, func() { _ = srv.Close() }) // a forward nobody ends
		_ = srv.ListenAndServe()
	default:
		fmt.Fprintf(os.Stderr, "fake kubectl: %s\n", args)
		os.Exit(1)
	}
}
