//go:build unix

package tune

import (
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestReadResultRefuses: a results directory entry that is not tune's
// file is an error naming it, at once: a named pipe (os.ReadFile blocked
// on it for good, and with it serve's tuning of every target and the
// live-miss checks), a file over MaxResultSize, and a file whose policy
// string (what serve exports and logs) is not its candidate's (what
// decides).
func TestReadResultRefuses(t *testing.T) {
	dir := t.TempDir()
	path := ResultPath(dir, "chat")
	if err := syscall.Mkfifo(path, 0o644); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	done := make(chan error, 1)
	go func() { _, _, err := ReadResult(dir, "chat"); done <- err }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), path+": not a regular file (a named pipe)") {
			t.Errorf("a named pipe: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("ReadResult blocked on a named pipe")
	}
	os.Remove(path)
	if err := os.WriteFile(path, make([]byte, MaxResultSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadResult(dir, "chat"); err == nil || !strings.Contains(err.Error(), fmt.Sprintf("%s: %d bytes, larger than the %d allowed", path, MaxResultSize+1, MaxResultSize)) {
		t.Errorf("a file of 1 MiB + 1: %v", err)
	}
	c := Candidate{Metric: "queue", Target: 8}
	if err := WriteResult(dir, TargetResult{Target: "chat", Policy: "queue:16", Candidate: c}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := ReadResult(dir, "chat"); err == nil || err.Error() != path+`: not a tune result: its policy "queue:16" is not its candidate's "queue:8"` {
		t.Errorf("policy and candidate differ: %v", err)
	}
}
