package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

// TestDurableOnWindows: WriteDurable and RemoveDurable succeed on Windows,
// which cannot sync a directory (os.Open(dir).Sync() is "Access is
// denied"): before, both returned "written, but its directory not
// synced" (decide --state, load --calibrate, serve's tune/NAME.json).
func TestDurableOnWindows(t *testing.T) {
	path := filepath.Join(t.TempDir(), "chat.json")
	if err := WriteDurable(path, []byte("{}\n")); err != nil {
		t.Fatalf("WriteDurable: %v, want nil", err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "{}\n" {
		t.Fatalf("after WriteDurable: %q, %v; want \"{}\\n\"", b, err)
	}
	if err := RemoveDurable(path); err != nil {
		t.Fatalf("RemoveDurable: %v, want nil", err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("after RemoveDurable: %v, want the file gone", err)
	}
}
