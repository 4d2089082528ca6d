package serve

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/infscale/infscale/internal/syncbuf"
	"github.com/infscale/infscale/pkg/config"
)

// TestUnclaimedStateFilesLogged: the state dir holds old.json and
// gone@prefill.json (targets no longer configured), a write's hidden
// temporary file, a notes.txt and a directory named sub.json. The start
// with chat and other logs one line naming the two .json files of no
// target, and nothing else; a cycle writes chat.json and other.json; a
// reload dropping other logs old.json, gone@prefill.json and other.json
// (sorted: gone@prefill, old, other); a second reload with the same list
// logs nothing more. Nothing is deleted: every file is still there at the
// end.
func TestUnclaimedStateFilesLogged(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []string{"old.json", "gone@prefill.json", ".chat.json.123.tmp", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, f), []byte("{}\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub.json"), 0o755); err != nil {
		t.Fatal(err)
	}
	store, err := NewStore(dir)
	if err != nil {
		t.Fatal(err)
	}
	src := &fakeSource{}
	src.set("chat", load(1, 50, 10))
	src.set("other", load(1, 5, 0))
	var logs syncbuf.Buffer
	l := newLoop(t, LoopOptions{Source: src, Metrics: NewMetrics(prometheus.NewRegistry(), "test"), Interval: 15 * time.Second,
		Now: time.Now, Store: store, Log: slog.New(slog.NewTextHandler(&logs, nil))})
	parse := func(s string) *config.File {
		t.Helper()
		f, err := config.Parse([]byte(s), "unclaimed.yaml")
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	ctx := context.Background()
	if err := l.SetConfig(ctx, parse(loopConfig)); err != nil {
		t.Fatal(err)
	}
	const msg = "state files of no configured target left in the state dir"
	lines := func() []string {
		var out []string
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, msg) {
				out = append(out, line)
			}
		}
		return out
	}
	got := lines()
	if len(got) != 1 || !strings.Contains(got[0], `files="[gone@prefill.json old.json]"`) || !strings.Contains(got[0], "level=INFO") {
		t.Fatalf("at start: %q, want one INFO line with files [gone@prefill.json old.json]", got)
	}
	l.Cycle(ctx)
	one := strings.Replace(loopConfig, "- name: other\n  scrape: [http://127.0.0.1:2/metrics]\n  metrics: [{type: queue, target: 10}]\n  max: 8\n", "", 1)
	if err := l.SetConfig(ctx, parse(one)); err != nil {
		t.Fatal(err)
	}
	got = lines()
	if len(got) != 2 || !strings.Contains(got[1], `files="[gone@prefill.json old.json other.json]"`) {
		t.Fatalf("after the reload: %q, want a second line with files [gone@prefill.json old.json other.json]", got)
	}
	// A reload that leaves the list as it was logs nothing more.
	if err := l.SetConfig(ctx, parse(one)); err != nil {
		t.Fatal(err)
	}
	if got = lines(); len(got) != 2 {
		t.Fatalf("after a reload with the same list: %d lines %q, want the 2 before", len(got), got)
	}
	for _, f := range []string{"old.json", "gone@prefill.json", ".chat.json.123.tmp", "notes.txt", "sub.json", "chat.json", "other.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s: %v, want it left in place", f, err)
		}
	}
}
