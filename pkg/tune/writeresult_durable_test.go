package tune

import (
	"reflect"
	"testing"

	"github.com/infscale/infscale/internal/atomicfile"
)

// TestWriteResultDurable: a result file is written with the data and the
// rename synced (atomicfile.WriteDurable); a plain atomic write may leave
// an empty NAME.json after a node crash on some file systems, which serve
// then refuses until the next run.
func TestWriteResultDurable(t *testing.T) {
	if reflect.ValueOf(writeResultFile).Pointer() != reflect.ValueOf(atomicfile.WriteDurable).Pointer() {
		t.Fatal("WriteResult does not use atomicfile.WriteDurable")
	}
	dir := t.TempDir()
	var got []string
	old := writeResultFile
	t.Cleanup(func() { writeResultFile = old })
	writeResultFile = func(path string, data []byte) error {
		got = append(got, path)
		return old(path, data)
	}
	if err := WriteResult(dir, TargetResult{Target: "chat", Policy: "queue:16"}); err != nil {
		t.Fatal(err)
	}
	if want := []string{ResultPath(dir, "chat")}; !reflect.DeepEqual(got, want) {
		t.Errorf("writes %v, want %v", got, want)
	}
}
