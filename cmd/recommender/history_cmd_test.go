package main

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/internal/promtest"
)

// TestHistoryCommandBackfills: `infscale history` writes 2 days ending at
// the current hour (the clock reads 2026-12-01T10:17Z: 2026-11-29T10:00Z ..
// 2026-12-01T10:00Z) into a TSDB a real Prometheus serves; the deployment's
// spec series is there at both ends, and a second run into the same
// directory is refused (exit 2) rather than adding blocks to it.
func TestHistoryCommandBackfills(t *testing.T) {
	if testing.Short() {
		t.Skip("runs promtool and Prometheus")
	}
	promtool := promtest.Binary(t, promtest.Promtool)
	data := filepath.Join(t.TempDir(), "data")
	now := func() time.Time { return time.Date(2026, 12, 1, 10, 17, 0, 0, time.UTC) }
	var out, errb bytes.Buffer
	args := []string{"history", "--data", data, "--promtool", promtool, "--days", "2", "--scrape", "2m"}
	if code := runHistory(t, now, args, &out, &errb); code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, want := range []string{"2026-11-29T10:00:00Z .. 2026-12-01T10:00:00Z", "--storage.tsdb.path=" + data, "infscale backtest --prometheus-url", "infscale profile"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	srv := promtest.Start(t, promtest.Options{DataDir: data, Flags: []string{"--storage.tsdb.retention.time=10y"}})
	api := srv.API(t)
	for _, at := range []time.Time{time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC), time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)} {
		v, _, _, err := api.Query(context.Background(), `kube_deployment_spec_replicas{namespace="llm",deployment="chat"}`, at)
		if err != nil {
			t.Fatal(err)
		}
		if vec, ok := v.(model.Vector); !ok || len(vec) != 1 || vec[0].Value < 1 {
			t.Errorf("spec replicas at %s: %v, want one series >= 1", at.Format(time.RFC3339), v)
		}
	}

	out.Reset()
	errb.Reset()
	if code := runHistory(t, now, args, &out, &errb); code != exitInvalid || !strings.Contains(errb.String(), "not empty") {
		t.Errorf("second run into %s: exit %d, %q; want 2 and not empty", data, code, errb.String())
	}
	if _, err := os.Stat(data); err != nil {
		t.Fatal(err)
	}
}

// runHistory runs args with the history command's clock set to now.
func runHistory(t *testing.T, now func() time.Time, args []string, stdout, stderr *bytes.Buffer) int {
	t.Helper()
	var cli CLI
	cli.History.now = now
	exit := 0
	parser, err := newParser(&cli, stdout, stderr, func(c int) { exit = c })
	if err != nil {
		t.Fatal(err)
	}
	kctx, err := parser.Parse(args)
	if err != nil {
		t.Fatal(err)
	}
	if exit != 0 {
		return exit
	}
	err = kctx.Run(&env{ctx: context.Background(), stdin: strings.NewReader(""), stdout: stdout, stderr: stderr})
	switch {
	case err == nil:
		return exitOK
	case errors.As(err, new(invalidInputError)):
		stderr.WriteString(err.Error())
		return exitInvalid
	}
	stderr.WriteString(err.Error())
	return exitRuntime
}
