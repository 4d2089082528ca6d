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

	"github.com/infscale/infscale/internal/buftest"
	"github.com/infscale/infscale/pkg/config"
)

// TestUnclaimedStateFilesLogged: the state dir holds old.json and
// gone@prefill.json (targets no longer configured), a write's hidden
// temporary file, a notes.txt and a directory named sub.json. The start
// with chat and other logs one line naming the two .json files of no
// target, and nothing else; a cycle writes chat.json and other.json; a
// reload dropping other logs old.json, gone@prefill.json and other.json
// (sorted: gone@prefill, old, other); a second reload with the same list
// logs nothing more; back and forth, each change is logged; a failed
// listing logs a WARN and the next listing is compared with the last
// list logged. Nothing is deleted: every file is still there at the end.
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
	var logs buftest.Buffer
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
	// Back and forth: other configured again (its file claimed: [gone@prefill
	// old]) and dropped again ([gone@prefill old other]), each logged.
	for i, c := range []struct{ cfg, files string }{{loopConfig, "[gone@prefill.json old.json]"}, {one, "[gone@prefill.json old.json other.json]"}} {
		if err := l.SetConfig(ctx, parse(c.cfg)); err != nil {
			t.Fatal(err)
		}
		if got = lines(); len(got) != 3+i || !strings.Contains(got[2+i], `files="`+c.files+`"`) {
			t.Fatalf("reload %d back and forth: %q, want line %d with files %s", i+1, got, 3+i, c.files)
		}
	}
	// A listing that fails (the dir moved away) logs a WARN and no list; it
	// does not stand for the last list logged: the next listing is compared
	// with [gone@prefill old other], so a change is logged (other
	// configured again) and the same list after a second failure is not.
	away := dir + ".away"
	unlisted := func(cfg string) {
		t.Helper()
		if err := os.Rename(dir, away); err != nil {
			t.Fatal(err)
		}
		if err := l.SetConfig(ctx, parse(cfg)); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(away, dir); err != nil {
			t.Fatal(err)
		}
	}
	unlisted(one)
	if got = lines(); len(got) != 4 || !strings.Contains(logs.String(), "state dir not listed") {
		t.Fatalf("after a failed listing: %d lines %q, want the 4 before and a WARN", len(got), got)
	}
	if err := l.SetConfig(ctx, parse(loopConfig)); err != nil {
		t.Fatal(err)
	}
	if got = lines(); len(got) != 5 || !strings.Contains(got[4], `files="[gone@prefill.json old.json]"`) {
		t.Fatalf("a changed list after a failed listing: %q, want a 5th line with files [gone@prefill.json old.json]", got)
	}
	unlisted(loopConfig)
	if err := l.SetConfig(ctx, parse(loopConfig)); err != nil {
		t.Fatal(err)
	}
	if got = lines(); len(got) != 5 {
		t.Fatalf("the same list after a failed listing: %d lines %q, want the 5 before", len(got), got)
	}
	for _, f := range []string{"old.json", "gone@prefill.json", ".chat.json.123.tmp", "notes.txt", "sub.json", "chat.json", "other.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("%s: %v, want it left in place", f, err)
		}
	}
}
