package kubee2e

import (
	"net/url"
	"path"
	"testing"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	kubeapiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"
)

// startEtcd runs a single-member etcd on loopback ports chosen by the kernel,
// its data in a temporary directory, and returns its client URL. It stops
// when the test ends.
func startEtcd(t *testing.T) string {
	t.Helper()
	cfg := embed.NewConfig()
	cfg.Dir = t.TempDir()
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cfg.UnsafeNoFsync = true
	lo := url.URL{Scheme: "http", Host: "127.0.0.1:0"}
	cfg.ListenClientUrls = []url.URL{lo}
	cfg.AdvertiseClientUrls = []url.URL{lo}
	cfg.ListenPeerUrls = []url.URL{lo}
	cfg.AdvertisePeerUrls = []url.URL{lo}
	cfg.InitialCluster = cfg.Name + "=" + lo.String()
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		t.Fatalf("embedded etcd: %v", err)
	}
	t.Cleanup(e.Close)
	select {
	case <-e.Server.ReadyNotify():
	case err := <-e.Err():
		t.Fatalf("embedded etcd: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("embedded etcd not ready after 30 s")
	}
	return "http://" + e.Clients[0].Addr().String()
}

// cluster is one kube-apiserver on its own etcd.
type cluster struct {
	config *rest.Config
	client kubernetes.Interface
	// token, when set, is the bearer token of the kubeconfig serve gets
	// (a user of --token-auth-file) instead of the loopback credentials.
	token string
}

// startCluster starts etcd and kube-apiserver (with extra kube-apiserver
// flags) and returns a client with cluster-admin rights (the server's
// loopback credentials, group system:masters). Both stop when the test
// ends.
func startCluster(t *testing.T, flags ...string) *cluster {
	t.Helper()
	storage := storagebackend.NewDefaultConfig(path.Join("/", t.Name(), "registry"), nil)
	storage.Transport.ServerList = []string{startEtcd(t)}
	opts := kubeapiservertesting.NewDefaultTestServerOptions()
	opts.DisableInvariantChecks = true
	srv, err := kubeapiservertesting.StartTestServer(t, opts, append([]string{"--disable-admission-plugins=ServiceAccount"}, flags...), storage)
	if err != nil {
		t.Fatalf("kube-apiserver: %v", err)
	}
	t.Cleanup(srv.TearDownFn)
	cs, err := kubernetes.NewForConfig(srv.ClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{config: srv.ClientConfig, client: cs}
}
