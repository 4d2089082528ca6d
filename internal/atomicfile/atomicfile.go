// Package atomicfile replaces a file so that a reader never sees half of
// it: the data goes to a temporary file in the same directory (so that the
// rename stays within one file system), which is renamed over the path.
// A crash leaves the old file or the new one, and at worst a hidden
// ".NAME.*.tmp" beside them. Write does not fsync: a power loss may lose
// the last write, and on some file systems leave the path empty;
// WriteDurable syncs the data before the rename and the directory after
// it, for a file a later run depends on (decide's --state); RemoveDurable
// syncs the directory after a removal, MkdirDurable the parent after a
// directory's creation. Windows cannot sync a directory:
// there only the file's data is synced (NTFS journals the rename).
package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/infscale/infscale/internal/boundedfile"
)

// Write replaces the file at path with data, mode 0644 (os.WriteFile's
// with the usual umask: a calibration, a plot or tune's results are read
// by other users, such as serve's; os.CreateTemp alone gives 0600). A
// symlink at path is followed: the file it names is replaced, the link
// kept (a rename over the link replaced the link with a file and left
// its target stale). Errors name path; the temporary file is removed on
// any error; an existing path that is not a regular file (CheckTarget)
// is left as it is.
func Write(path string, data []byte) error {
	return write(path, data, false)
}

// WriteDurable is Write that also survives a power loss: the data is
// synced to the disk before the rename, and the directory (the rename
// itself) after it. It costs a few milliseconds on a disk: for a file
// written once a run, not one per target every cycle.
func WriteDurable(path string, data []byte) error {
	return write(path, data, true)
}

func write(path string, data []byte, durable bool) error {
	if err := CheckTarget(path); err != nil {
		return err
	}
	path, err := Resolve(path)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	err = tmp.Chmod(0o644)
	if err == nil {
		_, err = tmp.Write(data)
	}
	if err == nil && durable {
		err = tmp.Sync()
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
	if durable {
		if err := syncDir(filepath.Dir(path)); err != nil {
			return fmt.Errorf("%s: written, but its directory not synced: %w", path, err)
		}
	}
	return nil
}

// RemoveDurable removes the file at path (a symlink itself, not what it
// names) and syncs its directory, so that a power loss cannot bring the
// file back: for a file whose return would mislead a later run (a tuning
// state that restores a dropped adoption). A missing path is no error and
// its directory is still synced (a removal whose sync failed before is
// made durable now); a missing directory holds nothing to sync. Errors:
// os.Remove's, naming path; "PATH: removed, but its directory not synced:
// ERR".
func RemoveDurable(path string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	if err := syncDir(filepath.Dir(path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("%s: removed, but its directory not synced: %w", path, err)
	}
	return nil
}

// MkdirDurable creates dir and its missing parents (os.MkdirAll, mode
// 0755) and syncs the parent of each directory it created, outermost
// first, so that a power loss cannot take a new directory away with the
// files WriteDurable then puts in it (their syncs reach the directory,
// not the entry naming it). An existing dir is no error and syncs
// nothing. On Windows the directories are only created (syncDir). Errors:
// os.MkdirAll's; "DIR: created, but its parent not synced: ERR".
func MkdirDurable(dir string) error {
	var created []string // missing before, innermost first
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); !errors.Is(err, fs.ErrNotExist) {
			break
		}
		created = append(created, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for i := len(created) - 1; i >= 0; i-- {
		if err := syncDir(filepath.Dir(created[i])); err != nil {
			return fmt.Errorf("%s: created, but its parent not synced: %w", created[i], err)
		}
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

// ErrNotRegular is CheckTarget's error for a path that exists and is not a
// regular file.
var ErrNotRegular = errors.New("not a regular file")

// CheckTarget refuses a path (followed if a symlink) that exists and is
// not a regular file: Write's rename would replace a device such as
// /dev/stdout, a named pipe or a socket with a file (a directory it
// cannot replace). Errors: "PATH: not a regular file (a device); give the
// path of a file to write" (errors.Is ErrNotRegular). A missing path is
// fine: Write creates it.
func CheckTarget(path string) error {
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().IsRegular() {
		return nil // missing (or unreadable: the write says why)
	}
	return fmt.Errorf("%s: %w (%s); give the path of a file to write", path, ErrNotRegular, boundedfile.Kind(fi.Mode()))
}

// Resolve is the file Write replaces for path: path with the symlinks of
// its last element followed (a dangling link names the file to create),
// other paths as they are. Its directory is where Write creates its
// temporary file (CheckDir it before a long run). Errors: a chain of more
// than 40 links, an unreadable link.
func Resolve(path string) (string, error) {
	for range 40 { // Linux's own bound on a chain of links
		fi, err := os.Lstat(path)
		if err != nil || fi.Mode()&os.ModeSymlink == 0 {
			return path, nil
		}
		target, err := os.Readlink(path)
		if err != nil {
			return "", fmt.Errorf("%s: %w", path, err)
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(path), target)
		}
		path = target
	}
	return "", fmt.Errorf("%s: too many levels of symbolic links", path)
}
