package serve

import (
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/promql"
)

// holdingPrometheus is a fake Prometheus HTTP API for the rebuild's range
// queries: those of target "b" hang until release is closed (asked is
// closed when the first arrives), then answer desired (and raw) 5 every
// 15 s over the last 5 minutes; every other target has no history.
func holdingPrometheus(t *testing.T) (srv *httptest.Server, asked, release chan struct{}) {
	asked, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if !strings.Contains(r.FormValue("query"), `target="b"`) {
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[]}}`)
			return
		}
		once.Do(func() { close(asked) })
		select {
		case <-release:
		case <-r.Context().Done():
			return
		}
		end := time.Now()
		var vals []string
		for at := end.Add(-5 * time.Minute); !at.After(end); at = at.Add(15 * time.Second) {
			vals = append(vals, fmt.Sprintf(`[%d,"5"]`, at.Unix()))
		}
		fmt.Fprintf(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{},"values":[%s]}]}}`, strings.Join(vals, ","))
	}))
	t.Cleanup(srv.Close)
	return srv, asked, release
}

// TestReloadRestoreDoesNotBlockCycles: a reload adds target b, whose
// rebuild from Prometheus hangs (until released here; in production up to
// prometheus.timeout). The reload held the cycles until the rebuild ended:
// a, unchanged, went undecided meanwhile. Now, with cycles every 20 ms, a
// decides 5 more times while b's rebuild hangs (waited for up to 10 s: it
// never happened before), b not at all, and SetConfig has not returned;
// once released, SetConfig returns and b decides on its restored state:
// desired 5 held (its load, 0 requests on 5 replicas, asks for 1; a
// restored target does not scale down before a full window of fresh
// observations).
func TestReloadRestoreDoesNotBlockCycles(t *testing.T) {
	prom, asked, release := holdingPrometheus(t)
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	head := "prometheus: {url: '" + prom.URL + "', timeout: 1m}\ninterval: 15s\ntargets:\n" +
		"- {name: a, selector: '{pod=\"a\"}', metrics: [{type: queue, target: 24}], max: 8}\n"
	cfg1, err := config.Parse([]byte(head), "one.yaml")
	if err != nil {
		t.Fatal(err)
	}
	cfg2, err := config.Parse([]byte(head+"- {name: b, selector: '{pod=\"b\"}', metrics: [{type: queue, target: 24}], max: 8}\n"), "two.yaml")
	if err != nil {
		t.Fatal(err)
	}
	api, err := promql.NewClient(promql.ClientConfig{URL: prom.URL, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	rb := &Rebuilder{API: api, Step: 15 * time.Second, Timeout: time.Minute}
	src := &fakeSource{}
	src.set("a", load(2, 30, 0))
	src.set("b", load(5, 0, 0))
	decisions := make(chan Record, 1000)
	l := newLoop(t, LoopOptions{Source: src, Metrics: NewMetrics(prometheus.NewRegistry(), "test"), Interval: 20 * time.Millisecond,
		Rebuild: rb.Rebuild, Log: slog.New(slog.DiscardHandler), OnDecision: func(r Record) { decisions <- r }})
	if err := l.SetConfig(t.Context(), cfg1); err != nil {
		t.Fatal(err)
	}
	go l.Run(t.Context())
	reloaded := make(chan error, 1)
	go func() { reloaded <- l.SetConfig(t.Context(), cfg2) }()
	select {
	case <-asked:
	case <-time.After(10 * time.Second):
		t.Fatal("b's rebuild query never reached Prometheus")
	}
	deadline := time.After(10 * time.Second)
	for a := 0; a < 5; {
		select {
		case r := <-decisions:
			switch r.Target {
			case "a":
				a++
			case "b":
				t.Fatalf("b decided (desired %d) while its rebuild hung", r.Desired)
			}
		case <-deadline:
			t.Fatalf("a decided %d times in 10 s while b's rebuild hung, want 5 (cycles every 20 ms): the reload held the cycles", a)
		}
	}
	select {
	case err := <-reloaded:
		t.Fatalf("SetConfig returned (%v) before b's rebuild was released", err)
	default:
	}
	if _, ok := l.Recent()["b"]; ok {
		t.Error("Recent lists b while its restore is under way")
	}
	// The restore writes b's decider as the release lands: a reader of
	// every target's decisions (the HTTP handlers' Recent) runs beside it,
	// for -race to see.
	stopRead := make(chan struct{})
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		for {
			select {
			case <-stopRead:
				return
			default:
				_ = l.Recent()
			}
		}
	}()
	close(release)
	select {
	case err := <-reloaded:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("SetConfig did not return 10 s after b's rebuild was released")
	}
	close(stopRead)
	<-readDone
	for {
		select {
		case r := <-decisions:
			if r.Target != "b" {
				continue
			}
			if r.Desired != 5 {
				t.Errorf("b's first decision: desired %d (%s), want 5 (its restored state held)", r.Desired, r.Reason)
			}
			return
		case <-time.After(10 * time.Second):
			t.Fatal("b never decided after its restore")
		}
	}
}
