//go:build !windows

package atomicfile

import (
	"errors"
	"os"
	"syscall"
)

// syncDir syncs a directory, making a rename in it durable. A file system
// that cannot sync a directory (EINVAL: some network and FUSE ones) is
// taken as done: the rename is as durable as it can make it.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return err
	}
	return nil
}
