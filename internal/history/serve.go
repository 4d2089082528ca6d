package history

import (
	"bufio"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/infscale/infscale/internal/promtest"
)

// Serve writes the history for cfg, loads it into a TSDB with the pinned
// promtool (`tsdb create-blocks-from openmetrics`, blocks of up to 54 h so
// that promtool parses the file a few times rather than once per 2-hour
// block), and starts the pinned Prometheus on it with a 10-year retention
// (retention counts from the newest block, and the history is in the
// past). Query it over [Truth.Start, Truth.End] explicitly. It skips the
// test when the binaries are unavailable (fails under CI=true).
func Serve(t testing.TB, cfg Config) (*promtest.Server, Truth) {
	t.Helper()
	var tr Truth
	srv := serve(t, func(w io.Writer) (err error) {
		tr, err = Write(w, cfg)
		return err
	})
	return srv, tr
}

// ServeReplica is Serve for a Replica history.
func ServeReplica(t testing.TB, cfg Replica) (*promtest.Server, ReplicaTruth) {
	t.Helper()
	var tr ReplicaTruth
	srv := serve(t, func(w io.Writer) (err error) {
		tr, err = WriteReplica(w, cfg)
		return err
	})
	return srv, tr
}

// serve writes a history with write, loads it into a TSDB and starts
// Prometheus on it (Serve's steps).
func serve(t testing.TB, write func(io.Writer) error) *promtest.Server {
	t.Helper()
	dir := t.TempDir()
	in := filepath.Join(dir, "history.om")
	f, err := os.Create(in)
	if err != nil {
		t.Fatal(err)
	}
	bw := bufio.NewWriter(f)
	err = write(bw)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		t.Fatal(err)
	}
	data := promtest.CreateBlocks(t, in, "--quiet", "--max-block-duration=54h")
	os.Remove(in)
	return promtest.Start(t, promtest.Options{DataDir: data, Flags: []string{"--storage.tsdb.retention.time=10y"}})
}
