package serve

import (
	"context"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// TestServeSurvivesPrometheusRestart: Prometheus goes away between two
// cycles (its listener and connections closed) and comes back on the same
// address 10 minutes later (40 cycles, twice the 5 min scale-down window),
// with less load. Serve, not restarted, holds the last desired through the
// outage (no-data, each cycle's reads counted unavailable, the last
// decision's timestamp left at the outage's start, no current replicas
// series), and reads again at the first cycle after it comes back. Hand values: queue target 4, the
// replicas query 2; running 8 over 2: ceil(8/4) = 2. After the outage
// running 4: ceil(4/4) = 1, but the outage's held 2 is in the scale-down
// window (the HPA's max over it): 2 while the outage's last cycle is less
// than 5 min old, then 1 (the HPA keeps records after now - window: one
// exactly 5 min old is out).
func TestServeSurvivesPrometheusRestart(t *testing.T) {
	fake := &promAnswers{}
	fake.set(vllmRules("2", "8", "0")...)
	srv := fake.serve(t)
	addr := srv.Listener.Addr().String()
	l, m, now := promLoop(t, srv, chatConfig, 1, nil)
	l.Cycle(context.Background())
	if got := desired(t, m, "chat"); got != 2 {
		t.Fatalf("desired %v, want 2", got)
	}
	start := *now
	srv.Close() // Prometheus stops: refused connections from here on
	for i := 0; i < 40; i++ {
		*now = now.Add(15 * time.Second)
		l.Cycle(context.Background())
		if got, r := desired(t, m, "chat"), lastRecord(l, "chat"); got != 2 || r.Reason != "no-data" || !r.Held {
			t.Fatalf("outage cycle %d: desired %v (%s, held %v), want 2 held (no-data)", i, got, r.Reason, r.Held)
		}
		// No replicas were read: no current series (it kept the 2 read
		// before the outage, which InfscaleConsumerNotActing compares with
		// desired), the record's observed null.
		if got, r := gaugeValue(t, m, "current_replicas", "chat"), lastRecord(l, "chat"); !math.IsNaN(got) || r.Observed != nil {
			t.Fatalf("outage cycle %d: current_replicas %v, observed %v; want both absent", i, got, r.Observed)
		}
	}
	if got := counterValue(t, m, "query_errors_total", "chat", "unavailable"); got < 40 {
		t.Errorf("unavailable errors %v, want at least one a cycle (40)", got)
	}
	if got := gaugeValue(t, m, "last_decision_timestamp_seconds", "chat"); got != float64(start.Unix()) {
		t.Errorf("last decision %v, want %v (the outage's start)", got, start.Unix())
	}
	// The same Prometheus comes back on the same address, with less load.
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		t.Skipf("address %s taken meanwhile: %v", addr, err)
	}
	fake.set(vllmRules("2", "4", "0")...)
	back := &httptest.Server{Listener: ln, Config: &http.Server{Handler: fake.serve(t).Config.Handler}}
	back.Start()
	defer back.Close()
	lastHeld := *now
	for *now = now.Add(15 * time.Second); now.Sub(lastHeld) < 5*time.Minute; *now = now.Add(15 * time.Second) {
		l.Cycle(context.Background())
		r := lastRecord(l, "chat")
		if r.Held || r.Signals.Running == nil || *r.Signals.Running != 4 || desired(t, m, "chat") != 2 {
			t.Fatalf("%v after the outage: held %v, running %v, desired %v; want running 4 read, desired 2 (the window holds the outage's 2)",
				now.Sub(lastHeld), r.Held, r.Signals.Running, desired(t, m, "chat"))
		}
		if got := gaugeValue(t, m, "last_decision_timestamp_seconds", "chat"); got != float64(now.Unix()) {
			t.Fatalf("last decision %v, want %v (this cycle)", got, now.Unix())
		}
		if got := gaugeValue(t, m, "current_replicas", "chat"); got != 2 {
			t.Fatalf("current_replicas %v, want 2 (read again)", got)
		}
	}
	l.Cycle(context.Background())
	if got := desired(t, m, "chat"); got != 1 {
		t.Errorf("%v after the outage's last cycle: desired %v, want 1", now.Sub(lastHeld), got)
	}
}

// gaugeValue is the value of gauge infscale_<family>{target}, read from the
// exposition; NaN when the series is absent.
func gaugeValue(t *testing.T, m *Metrics, family, target string) float64 {
	t.Helper()
	mfs, err := m.table.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != Namespace+"_"+family {
			continue
		}
		for _, s := range mf.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "target" && l.GetValue() == target {
					return s.GetGauge().GetValue()
				}
			}
		}
	}
	return math.NaN()
}
