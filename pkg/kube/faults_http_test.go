package kube_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/infscale/infscale/pkg/kube"
)

// faultServer is an API server serving apps/v1 Deployment llm/chat's
// scale subresource over HTTP, whose scale GET and PUT answer what get
// and put say (nil: the stored scale), as a real client meets them.
type faultServer struct {
	mu       sync.Mutex
	replicas int32
	rv       int
	get, put func(w http.ResponseWriter, r *http.Request) bool // true: answered
	gets     atomic.Int32
	puts     atomic.Int32
}

func (f *faultServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	js := func(v any) { w.Header().Set("Content-Type", "application/json"); _ = json.NewEncoder(w).Encode(v) }
	switch r.URL.Path {
	case "/api":
		js(metav1.APIVersions{TypeMeta: metav1.TypeMeta{Kind: "APIVersions"}, Versions: []string{"v1"}})
	case "/apis":
		js(metav1.APIGroupList{TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"}, Groups: []metav1.APIGroup{{Name: "apps",
			Versions: []metav1.GroupVersionForDiscovery{{GroupVersion: "apps/v1", Version: "v1"}}, PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "apps/v1", Version: "v1"}}}})
	case "/api/v1":
		js(metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "v1"})
	case "/apis/apps/v1":
		js(metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
			{Name: "deployments", Namespaced: true, Kind: "Deployment", Verbs: []string{"get", "list", "update"}},
			{Name: "deployments/scale", Namespaced: true, Group: "autoscaling", Version: "v1", Kind: "Scale", Verbs: []string{"get", "update"}}}})
	case "/apis/apps/v1/namespaces/llm/deployments/chat/scale":
		f.mu.Lock() // the test swaps them while a hung handler may still run
		get, put := f.get, f.put
		f.mu.Unlock()
		if r.Method == http.MethodGet {
			f.gets.Add(1)
			if get != nil && get(w, r) {
				return
			}
			f.mu.Lock()
			s := f.scale()
			f.mu.Unlock()
			js(s)
			return
		}
		f.puts.Add(1)
		if put != nil && put(w, r) {
			return
		}
		var s autoscalingv1.Scale
		if err := json.NewDecoder(r.Body).Decode(&s); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		f.mu.Lock()
		defer f.mu.Unlock()
		if s.ResourceVersion != fmt.Sprint(f.rv) {
			status(w, http.StatusConflict, "Conflict", "the object has been modified")
			return
		}
		f.replicas, f.rv = s.Spec.Replicas, f.rv+1
		js(f.scale())
	case "/apis/autoscaling/v2/namespaces/llm/horizontalpodautoscalers":
		if r.URL.Query().Get("watch") == "true" { // no HPA ever: hold the watch open
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusOK)
			// client-go's watch-list waits for the end of the initial events.
			_, _ = w.Write([]byte(`{"type":"BOOKMARK","object":{"kind":"HorizontalPodAutoscaler","apiVersion":"autoscaling/v2","metadata":{"resourceVersion":"1","annotations":{"k8s.io/initial-events-end":"true"}}}}` + "\n"))
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return
		}
		js(map[string]any{"kind": "HorizontalPodAutoscalerList", "apiVersion": "autoscaling/v2", "metadata": map[string]any{"resourceVersion": "1"}, "items": []any{}})
	default:
		http.NotFound(w, r)
	}
}

func (f *faultServer) scale() *autoscalingv1.Scale {
	return &autoscalingv1.Scale{TypeMeta: metav1.TypeMeta{Kind: "Scale", APIVersion: "autoscaling/v1"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "llm", Name: "chat", ResourceVersion: fmt.Sprint(f.rv)},
		Spec:       autoscalingv1.ScaleSpec{Replicas: f.replicas}, Status: autoscalingv1.ScaleStatus{Replicas: f.replicas, Selector: "app=chat"}}
}

func status(w http.ResponseWriter, code int, reason metav1.StatusReason, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: "Failure", Code: int32(code), Reason: reason, Message: msg})
}

// TestScaleFaultsOverHTTP: each fault of the scale read and write, as
// client-go meets it over HTTP, ends within the request bound with its
// reason, writes nothing on garbage, and the next good answer is read and
// written.
func TestScaleFaultsOverHTTP(t *testing.T) {
	always := func(h func(w http.ResponseWriter)) func(http.ResponseWriter, *http.Request) bool {
		return func(w http.ResponseWriter, _ *http.Request) bool { h(w); return true }
	}
	hang := func(w http.ResponseWriter, r *http.Request) bool {
		select { // past the request bound; then gone, so the server closes
		case <-r.Context().Done():
		case <-time.After(3 * time.Second):
		}
		return true
	}
	body := func(b string) func(http.ResponseWriter, *http.Request) bool {
		return always(func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(b))
		})
	}
	reset := func(w http.ResponseWriter, _ *http.Request) bool {
		c, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			c.Close()
		}
		return true
	}
	for _, tc := range []struct {
		name     string
		get, put func(http.ResponseWriter, *http.Request) bool
		reason   string // of the read (get) or the write (put, or apply)
		apply    bool   // Apply with get's fault: the write's own read
	}{
		{name: "429 Retry-After on read", get: always(func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "1")
			status(w, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, "too many requests")
		}), reason: "timeout"},
		{name: "429 on read", get: always(func(w http.ResponseWriter) {
			status(w, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, "too many requests")
		}), reason: "unavailable"},
		{name: "500 on read", get: always(func(w http.ResponseWriter) { status(w, 500, metav1.StatusReasonInternalError, "etcd") }), reason: "unavailable"},
		{name: "503 on read", get: always(func(w http.ResponseWriter) { status(w, 503, metav1.StatusReasonServiceUnavailable, "down") }), reason: "unavailable"},
		{name: "hang on read", get: hang, reason: "timeout"},
		{name: "reset on read", get: reset, reason: "timeout"}, // a GET is retried on EOF until the bound
		{name: "garbage json on read", get: body(`{"kind":"Scale","apiVersion":"autoscaling/v1","spec":{"replicas":"many"}}`), reason: "bad_data"},
		{name: "not json on read", get: body(`<html>502 from a proxy</html>`), reason: "bad_data"},
		{name: "truncated json on read", get: body(`{"kind":"Scale","apiVersion":"autoscaling/v1","spec":{"repl`), reason: "bad_data"},
		{name: "another kind on read", get: body(`{"kind":"Pod","apiVersion":"v1","metadata":{"name":"chat"}}`), reason: "bad_data"},
		{name: "no kind on read", get: body(`{"spec":{"replicas":3}}`), reason: "bad_data"},
		{name: "garbage json on the write's read", apply: true, get: body(`{"kind":"Scale","apiVersion":"autoscaling/v1","spec":{"replicas":"many"}}`), reason: "bad_data"},
		{name: "negative on read", get: always(func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"kind":"Scale","apiVersion":"autoscaling/v1","metadata":{"name":"chat","namespace":"llm"},"spec":{"replicas":-1},"status":{"replicas":2}}`))
		}), reason: "bad_data"},
		{name: "negative on the write's read", apply: true, get: always(func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"kind":"Scale","apiVersion":"autoscaling/v1","metadata":{"name":"chat","namespace":"llm","resourceVersion":"0"},"spec":{"replicas":-1},"status":{"replicas":2}}`))
		}), reason: "bad_data"},
		{name: "429 Retry-After on write", put: always(func(w http.ResponseWriter) {
			w.Header().Set("Retry-After", "1")
			status(w, http.StatusTooManyRequests, metav1.StatusReasonTooManyRequests, "too many requests")
		}), reason: "timeout"},
		{name: "409 storm", put: always(func(w http.ResponseWriter) { status(w, 409, metav1.StatusReasonConflict, "modified") }), reason: "conflict"},
		{name: "503 on write", put: always(func(w http.ResponseWriter) { status(w, 503, metav1.StatusReasonServiceUnavailable, "down") }), reason: "unavailable"},
		{name: "hang on write", put: hang, reason: "timeout"},
		{name: "reset mid-write", put: reset, reason: "unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := &faultServer{replicas: 2, get: tc.get, put: tc.put}
			srv := httptest.NewServer(f)
			defer srv.Close()
			cl, err := kube.NewCluster(&rest.Config{Host: srv.URL}, "llm")
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			cl.RequestTimeout = 1500 * time.Millisecond
			a := &kube.Applier{Cluster: cl}
			start := time.Now()
			var got kube.Applied
			if tc.get != nil && !tc.apply {
				_, err = cl.Scale(context.Background(), chatRef())
			} else {
				got, err = a.Apply(context.Background(), chatRef(), 4)
			}
			took := time.Since(start)
			t.Logf("%s: %v (reason %s) in %s, %d gets, %d puts", tc.name, err, kube.Reason(err), took.Round(time.Millisecond), f.gets.Load(), f.puts.Load())
			if err == nil || kube.Reason(err) != tc.reason {
				t.Errorf("err %v, reason %q; want reason %q", err, kube.Reason(err), tc.reason)
			}
			if took > 2*cl.RequestTimeout+time.Second {
				t.Errorf("took %s, want within the request bound", took)
			}
			if got.Wrote || (tc.get != nil && f.puts.Load() != 0) { // nothing written over a failed read
				t.Errorf("wrote %+v, %d puts", got, f.puts.Load())
			}
			// The first good answer: read, then written.
			f.mu.Lock()
			f.get, f.put = nil, nil
			want := f.replicas
			f.mu.Unlock()
			if w, err := cl.Scale(context.Background(), chatRef()); err != nil || w.Replicas != want {
				t.Errorf("good read: %+v %v", w, err)
			}
			if got, err := a.Apply(context.Background(), chatRef(), 4); err != nil || !got.Wrote {
				t.Errorf("good write: %+v %v", got, err)
			}
			if f.replicas != 4 {
				t.Errorf("spec.replicas %d after the good write, want 4", f.replicas)
			}
		})
	}
}

// TestThrottledPastTheBoundIsATimeout: a scale read the client-side rate
// limiter would hold past the request bound is not sent, and is counted
// as the timeout it is. At 0.2 requests/s with a burst of 20, discovery and
// the reads use the burst; the next read waits 5 s for its token, past a
// 500 ms bound.
func TestThrottledPastTheBoundIsATimeout(t *testing.T) {
	f := &faultServer{replicas: 2}
	srv := httptest.NewServer(f)
	defer srv.Close()
	cl, err := kube.NewCluster(&rest.Config{Host: srv.URL, QPS: 0.2, Burst: 20}, "llm")
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	cl.RequestTimeout = 500 * time.Millisecond
	for i := 0; i < 25; i++ {
		start := time.Now()
		_, err = cl.Scale(context.Background(), chatRef())
		if err == nil {
			continue
		}
		if kube.Reason(err) != "timeout" {
			t.Errorf("throttled read: %v, reason %q; want reason timeout", err, kube.Reason(err))
		}
		if took := time.Since(start); took > 2*cl.RequestTimeout {
			t.Errorf("throttled read took %s, want within the bound", took)
		}
		if n := f.gets.Load(); n != int32(i) {
			t.Errorf("%d scale GETs reached the server before read %d failed, want %d (the throttled one is not sent)", n, i, i)
		}
		return
	}
	t.Fatal("25 reads within a burst of 20: none throttled")
}
