// Package atomicfile replaces a file so that a reader never sees half of
// it: the data goes to a temporary file in the same directory (so that the
// rename stays within one file system), which is renamed over the path.
// A crash leaves the old file or the new one, and at worst a hidden
// ".NAME.*.tmp" beside them. There is no fsync: a power loss may lose the
// last write, as it may lose any other.
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
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

// ErrNotWritable is CheckDir's error for a directory Write cannot create
// files in.
var ErrNotWritable = errors.New("not writable")

// CheckDir reports, before a long run whose result Write writes into dir,
// whether Write can create its temporary file there now: it creates one
// (hidden, ".infscale-check.*.tmp") and removes it. Errors: "DIR: not
// writable: REASON" (errors.Is ErrNotWritable; REASON the system's, e.g.
// read-only file system, permission denied), naming DIR; a missing dir is
// one of them (callers that word it better check existence first).
func CheckDir(dir string) error {
	f, err := os.CreateTemp(dir, ".infscale-check.*.tmp")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return fmt.Errorf("%s: %w: %w", dir, ErrNotWritable, err)
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}
