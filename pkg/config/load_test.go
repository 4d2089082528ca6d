package config

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestLoadRefusesNonRegular: a FIFO blocked Load forever (open waits for a
// writer, and SIGTERM only cancels a context), /dev/zero exhausted memory (a
// fatal out-of-memory crash), a directory gave a bare read error. Each is
// refused before any read, naming what the path is.
func TestLoadRefusesNonRegular(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "serve.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFO on this system: %v", err)
	}
	link := filepath.Join(dir, "zero.yaml")
	cases := map[string]string{fifo: "not a regular file (a named pipe)", dir: "not a regular file (a directory)"}
	if _, err := os.Stat("/dev/zero"); err == nil && os.Symlink("/dev/zero", link) == nil {
		cases[link] = "not a regular file (a device)"
	}
	for path, want := range cases {
		cfg, err := Load(path) // returns at once; a blocking read would hang the test
		if cfg != nil || err == nil || !strings.Contains(err.Error(), path+": "+want) {
			t.Errorf("Load(%s) = %v, %v; want an error containing %q", path, cfg, err, want)
		}
	}
}

// TestLoadSymlink: a ConfigMap mount is a symlink to a regular file; it loads.
func TestLoadSymlink(t *testing.T) {
	abs, err := filepath.Abs("../../examples/serve-embedded.yaml")
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "serve.yaml")
	if err := os.Symlink(abs, link); err != nil {
		t.Skipf("no symlinks: %v", err)
	}
	if _, err := Load(link); err != nil {
		t.Errorf("symlink to a valid file: %v", err)
	}
}

// TestLoadTooLarge: a file above MaxFileSize is refused by its size, unread.
func TestLoadTooLarge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.yaml")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(MaxFileSize + 1); err != nil { // sparse: no 4 MiB written
		t.Fatal(err)
	}
	f.Close()
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), "larger than the 4194304 allowed") {
		t.Errorf("Load of %d bytes: %v", MaxFileSize+1, err)
	}
}

// Issue 13 item 6: a configuration nested 40,000 deep (80 KB; it ran the
// YAML parser out of memory) is refused before the parse with its
// position: the key targets is level 1, the first '[' (column 10) level 2,
// so level 65 opens at column 10 + 63 = 73 of line 1.
func TestParseDeepNesting(t *testing.T) {
	deep := "targets: " + strings.Repeat("[", 40000) + strings.Repeat("]", 40000) + "\n"
	_, err := Parse([]byte(deep), "deep.yaml")
	if err == nil || !strings.Contains(err.Error(), "deep.yaml:1:73: nested more than 64 levels") {
		t.Errorf("err = %v, want deep.yaml:1:73 and the bound", err)
	}
}

// FuzzParse: any bytes as a configuration either load or fail with Errors
// (never a panic, never a half-built *File); deep nesting is refused fast.
func FuzzParse(f *testing.F) {
	f.Add([]byte("targets:\n- name: chat\n  scrape: [http://127.0.0.1:8000/metrics]\n  metrics: [{type: queue, target: 24}]\n  max: 8\n"))
	f.Add([]byte("prometheus: {url: http://p:9090}\ntargets:\n- {name: a, selector: '{app=\"a\"}', metrics: [{type: ttft, target: 2s}], max: 3, behavior: {scaleDown: {policies: [{type: Pods, value: 1, periodSeconds: 60}]}}}\n"))
	f.Add([]byte("targets: " + strings.Repeat("[", 200) + strings.Repeat("]", 200) + "\n"))
	f.Add([]byte(strings.Repeat("- ", 100) + "x\n"))
	f.Add([]byte("a: &a [1, 2]\nb: [*a, *a, *a]\n"))
	f.Add([]byte("\xef\xbb\xbftargets: []\n\x00"))
	f.Fuzz(func(t *testing.T, data []byte) {
		cfg, err := Parse(data, "fuzz.yaml")
		if (cfg == nil) == (err == nil) {
			t.Fatalf("Parse: cfg %v err %v: exactly one must be set", cfg != nil, err)
		}
	})
}
