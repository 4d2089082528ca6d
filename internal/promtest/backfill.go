package promtest

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
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
	in := filepath.Join(t.TempDir(), "history.om")
	if err := os.WriteFile(in, []byte(openMetrics), 0o644); err != nil {
		t.Fatal(err)
	}
	return CreateBlocks(t, in)
}

// CreateBlocksTimeout bounds one promtool backfill: a week of history takes
// seconds to a minute; past this the test fails saying so instead of
// hanging until go test's own timeout.
const CreateBlocksTimeout = 5 * time.Minute

// CreateBlocks runs `promtool tsdb create-blocks-from openmetrics [flags] in
// DIR` on the OpenMetrics file in and returns DIR, a fresh data directory to
// pass as Options.DataDir. It fails the test on promtool's error or after
// CreateBlocksTimeout.
func CreateBlocks(t testing.TB, in string, flags ...string) string {
	t.Helper()
	bin := Binary(t, Promtool)
	data := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithTimeout(context.Background(), CreateBlocksTimeout)
	defer cancel()
	args := append([]string{"tsdb", "create-blocks-from", "openmetrics"}, flags...)
	cmd := exec.CommandContext(ctx, bin, append(args, in, data)...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("promtool tsdb create-blocks-from openmetrics %s: killed after %v (a loaded machine, or promtool stuck)\n%s", in, CreateBlocksTimeout, out)
	}
	if err != nil {
		t.Fatalf("promtool tsdb create-blocks-from openmetrics: %v\n%s", err, out)
	}
	return data
}
