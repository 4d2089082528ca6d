// Package atomicfile replaces a file so that a reader never sees half of
// it: the data goes to a temporary file in the same directory (so that the
// rename stays within one file system), which is renamed over the path.
// A crash leaves the old file or the new one, and at worst a hidden
// ".NAME.*.tmp" beside them. There is no fsync: a power loss may lose the
// last write, as it may lose any other.
package atomicfile

import (
	"fmt"
	"os"
	"path/filepath"
)

// Write replaces the file at path with data, mode 0644 (os.WriteFile's
// with the usual umask: a calibration, a plot or tune's results are read
// by other users, such as serve's; os.CreateTemp alone gives 0600).
// Errors name path; the temporary file is removed on any error.
func Write(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	err = tmp.Chmod(0o644)
	if err == nil {
		_, err = tmp.Write(data)
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}
