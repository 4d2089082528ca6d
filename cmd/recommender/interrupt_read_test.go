package main

import (
	"bytes"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// hangingPage is a /metrics URL that never answers; asked is closed when
// the first request arrives (a read is in flight).
func hangingPage(t *testing.T) (url string, asked <-chan struct{}) {
	ch := make(chan struct{})
	var once sync.Once
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(ch) })
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() { close(release); srv.Close() })
	return srv.URL + "/metrics", ch
}

// TestDecideInterruptedReadDecidesNothing: a signal that arrives while a
// page is being read ends decide with 130 and the one line, as any other
// interruption: the page cut short is not a replica that did not answer
// (it would vote as a missing replica, and the decision on the other page
// alone would be printed and saved with exit 0), and --state is not
// written.
func TestDecideInterruptedReadDecidesNothing(t *testing.T) {
	url, asked := hangingPage(t)
	st := filepath.Join(t.TempDir(), "st.json")
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-asked; cancel() }()
	var out, errb bytes.Buffer
	code := run(ctx, []string{"decide", "--state", st, "--now", "1000", "--target", "8", "../../examples/pages/vllm-0.prom", url}, strings.NewReader(""), &out, &errb)
	cancel()
	if code != exitInterrupted || errb.String() != "infscale: interrupted\n" || out.Len() != 0 {
		t.Errorf("exit %d, stdout %q, stderr %q; want 130, nothing on stdout, \"infscale: interrupted\"", code, out.String(), errb.String())
	}
	if _, err := os.Stat(st); !os.IsNotExist(err) {
		t.Errorf("--state written after an interrupted read (stat: %v)", err)
	}
}

// TestKubeTimeoutDuringScrapeDecidesNothing: kube's --timeout bounds the
// whole command; a pod whose page never answers runs it out, and the
// command fails with "not done within --timeout" (exit 1) before deciding:
// no decision printed, --state not written (it was: the pod counted as
// missing, the other pod's queue decided on and saved, exit 0).
func TestKubeTimeoutDuringScrapeDecidesNothing(t *testing.T) {
	url, _ := hangingPage(t)
	host, port, _ := net.SplitHostPort(strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/metrics"))
	n, _ := strconv.Atoi(port)
	hung := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "llm", Name: "chat-b", Labels: map[string]string{"app": "chat"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "vllm", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: int32(n)}}}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, PodIP: host, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	fakeKube(t, servedPod(t, "chat-a", 20, 4), hung)
	st := filepath.Join(t.TempDir(), "st.json")
	start := time.Now()
	code, out, errs := runKube("-n", "llm", "--deployment", "chat", "--port", "http", "--target", "10", "--timeout", "1s", "--state", st)
	if code != exitRuntime || !strings.Contains(errs, "not done within --timeout 1s") || strings.Contains(out, "desired") {
		t.Errorf("exit %d after %s\n%s%s\nwant exit 1, not done within --timeout 1s, no decision", code, time.Since(start), out, errs)
	}
	if _, err := os.Stat(st); !os.IsNotExist(err) {
		t.Errorf("--state written after the command's deadline (stat: %v)", err)
	}
}
