package promtest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Backfill writes openMetrics (OpenMetrics text: timestamps in seconds,
// ending with "# EOF") into TSDB blocks with
// `promtool tsdb create-blocks-from openmetrics` and returns the data
// directory, to pass as Options.DataDir. Blocks split on 2-hour boundaries;
// Prometheus counts retention from the newest block, so pass a long
// --storage.tsdb.retention.time in Options.Flags for old history.
func Backfill(t testing.TB, openMetrics string) string {
	t.Helper()
	if !strings.HasSuffix(strings.TrimSpace(openMetrics), "# EOF") {
		t.Fatalf("promtest: backfill input must end with \"# EOF\" (OpenMetrics)")
	}
	bin := Binary(t, Promtool)
	dir := t.TempDir()
	in := filepath.Join(dir, "history.om")
	if err := os.WriteFile(in, []byte(openMetrics), 0o644); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(dir, "data")
	cmd := exec.Command(bin, "tsdb", "create-blocks-from", "openmetrics", in, data)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("promtool tsdb create-blocks-from openmetrics: %v\n%s", err, out)
	}
	return data
}
