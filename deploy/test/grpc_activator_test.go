package deploytest

import (
	"context"
	"net"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/infscale/infscale/pkg/activator"
)

// TestActivatorGRPC: gRPC through the activator, with grpc-go on both
// sides (its client, and a server with its health service) and the
// activator probing the server with the gRPC health check
// (--probe-path /grpc.health.v1.Health/Check). A Check made while the
// server is down (scaled to zero) is held, and answered SERVING once the
// server starts 1 s later; a Watch (a server stream) gets its first status
// and then the server's change to NOT_SERVING as it happens.
func TestActivatorGRPC(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // down until the server starts on it
	a, err := activator.New(activator.Config{Upstream: &url.URL{Scheme: "http", Host: addr}, ProbePath: activator.GRPCHealthPath,
		ProbeInterval: 50 * time.Millisecond, HoldTimeout: 20 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go a.Run(ctx)
	front := httptest.NewUnstartedServer(a)
	front.Config.Protocols = activator.Protocols()
	front.Start()
	t.Cleanup(front.Close)

	conn, err := grpc.NewClient(strings.TrimPrefix(front.URL, "http://"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	client := healthpb.NewHealthClient(conn)
	type answer struct {
		resp *healthpb.HealthCheckResponse
		err  error
	}
	done := make(chan answer, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		defer cancel()
		resp, err := client.Check(ctx, &healthpb.HealthCheckRequest{})
		done <- answer{resp, err}
	}()
	for deadline := time.Now().Add(5 * time.Second); a.Held() != 1; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the Check was not held (held %d)", a.Held())
		}
	}
	time.Sleep(time.Second)
	ln, err = net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hs := health.NewServer()
	healthpb.RegisterHealthServer(srv, hs)
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	got := <-done
	if got.err != nil || got.resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("Check through the activator: %v, %v; want SERVING", got.resp, got.err)
	}

	wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer wcancel()
	w, err := client.Watch(wctx, &healthpb.HealthCheckRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if m, err := w.Recv(); err != nil || m.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		t.Fatalf("Watch's first status: %v, %v; want SERVING", m, err)
	}
	hs.SetServingStatus("", healthpb.HealthCheckResponse_NOT_SERVING)
	if m, err := w.Recv(); err != nil || m.GetStatus() != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("Watch's next status: %v, %v; want NOT_SERVING, streamed as it changed", m, err)
	}
}
