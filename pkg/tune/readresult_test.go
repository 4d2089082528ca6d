package tune

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReadResultDir: a tune.dir that holds no NAME.json yet is "no result
// yet" (the CronJob has not run); one that does not exist, or is a file,
// is an error naming it (a misspelt path or an unmounted volume read as
// "no result yet" forever, and serve never said so).
func TestReadResultDir(t *testing.T) {
	dir := t.TempDir()
	if _, ok, err := ReadResult(dir, "chat"); ok || err != nil {
		t.Errorf("empty dir: ok %v, err %v; want no result and no error", ok, err)
	}
	file := filepath.Join(dir, "f")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ dir, want string }{
		{filepath.Join(dir, "missing"), "tune.dir " + filepath.Join(dir, "missing") + " does not exist: want the directory infscale tune --shard writes"},
		{file, "not a directory"}, // open f/chat.json: the system's ENOTDIR, naming the path
	} {
		if _, ok, err := ReadResult(c.dir, "chat"); ok || err == nil || !strings.Contains(err.Error(), c.dir) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: ok %v, err %v; want %q", c.dir, ok, err, c.want)
		}
	}
}
