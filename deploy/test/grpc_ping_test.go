package deploytest

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"

	"github.com/infscale/infscale/pkg/activator"
)

// TestActivatorGRPCPingsWithinPolicy: the activator pings silent upstream
// HTTP/2 connections (UpstreamPingInterval), and a grpc-go server counts
// a ping less than its keepalive policy's MinTime (5 min by default;
// 1 s here) after the last one, while it sent no data, as a strike, and
// at the third closes the connection (GOAWAY ENHANCE_YOUR_CALM
// "too_many_pings"). A Watch stream silent for 4 s after its first
// status gets the next one: gRPC requests go on connections pinged after
// UpstreamGRPCPingInterval (1.2 s here, above MinTime). With the HTTP
// requests' interval (100 ms here, 15 s by default) for them too, the
// stream was cut after about 0.4 s of silence.
func TestActivatorGRPCPingsWithinPolicy(t *testing.T) {
	for _, c := range []struct {
		name string
		grpc time.Duration
		cut  bool
	}{
		{"gRPC interval above MinTime", 1200 * time.Millisecond, false},
		{"HTTP's interval for gRPC too", 100 * time.Millisecond, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			addr, hs := healthUpstream(t, grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{MinTime: time.Second}))
			a, err := activator.New(activator.Config{Upstream: &url.URL{Scheme: "http", Host: addr}, ProbePath: activator.GRPCHealthPath,
				ProbeInterval: 50 * time.Millisecond, UpstreamPingInterval: 100 * time.Millisecond, UpstreamPingTimeout: time.Second, UpstreamGRPCPingInterval: c.grpc})
			if err != nil {
				t.Fatal(err)
			}
			w := watchThrough(t, a, nil)
			time.Sleep(4 * time.Second)
			hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
			m, err := w.Recv()
			switch {
			case c.cut && err == nil:
				t.Errorf("Watch after 4 s of silence: %v, want it cut (too_many_pings)", m)
			case !c.cut && (err != nil || m.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING):
				t.Errorf("Watch after 4 s of silence: %v, %v; want NOT_SERVING", m, err)
			}
			if err != nil {
				t.Logf("cut: %v", err)
			}
		})
	}
}

// TestActivatorPingsGRPCClients: the activator's server pings client
// HTTP/2 connections silent for its ping interval (ServerHTTP2: 15 s by
// default, 100 ms here), and a grpc-go client acknowledges server pings
// without counting them (keepalive enforcement is a server's, of its
// clients' pings): a Watch through the activator silent for 2 s, about 20
// pings, gets the next status, on the same stream.
func TestActivatorPingsGRPCClients(t *testing.T) {
	addr, hs := healthUpstream(t)
	a, err := activator.New(activator.Config{Upstream: &url.URL{Scheme: "http", Host: addr}, ProbePath: activator.GRPCHealthPath, ProbeInterval: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	w := watchThrough(t, a, activator.ServerHTTP2(100*time.Millisecond, time.Second))
	time.Sleep(2 * time.Second)
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	if m, err := w.Recv(); err != nil || m.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Errorf("Watch after 2 s of server pings every 100 ms: %v, %v; want NOT_SERVING", m, err)
	}
}

// healthUpstream serves gRPC health on loopback with opts, until the test
// ends: its address and its health server.
func healthUpstream(t *testing.T, opts ...grpc.ServerOption) (string, *health.Server) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer(opts...)
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	return ln.Addr().String(), hs
}

// watchThrough runs a in front of its upstream (its server's HTTP/2
// settings h2, nil for Go's), waits until it is ready, and opens a
// health Watch through it (10 s at most) whose first status is SERVING.
func watchThrough(t *testing.T, a *activator.Activator, h2 *http.HTTP2Config) healthpb.Health_WatchClient {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go a.Run(ctx)
	front := httptest.NewUnstartedServer(a)
	front.Config.Protocols = activator.Protocols()
	front.Config.HTTP2 = h2
	front.Start()
	t.Cleanup(front.Close)
	for deadline := time.Now().Add(5 * time.Second); !a.Ready(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("not ready")
		}
	}
	conn, err := grpc.NewClient(strings.TrimPrefix(front.URL, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(wcancel)
	w, err := healthpb.NewHealthClient(conn).Watch(wctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := w.Recv(); err != nil || m.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("Watch's first status: %v, %v; want SERVING", m, err)
	}
	return w
}
