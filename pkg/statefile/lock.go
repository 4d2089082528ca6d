package statefile

import (
	"context"
	"os"
	"path/filepath"
	"time"

	"github.com/infscale/infscale/internal/atomicfile"
)

// lockPoll is how often Lock tries again while another process holds the
// lock.
const lockPoll = 20 * time.Millisecond

// LockPath is the lock file of the state file at path: ".NAME.lock"
// beside the file Write replaces for path (atomicfile.Resolve: the file a
// symlink at path names, even before it exists), so two links to one file
// share its lock. It stays after the unlock: removing it would let a third
// process lock a new file while a second holds the old one.
func LockPath(path string) string {
	if p, err := atomicfile.Resolve(path); err == nil {
		path = p
	}
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".lock")
}

// Lock takes the exclusive lock of the state file at path for one
// read-decide-write (decide --state), so that two processes deciding on
// one file at once take turns: each reads the other's decision instead of
// both reading the same state and the last rename dropping the first's
// (its recommendation, scale event and dip). It waits while another holds
// it, trying every 20 ms, until ctx ends (ctx.Err()). The lock is an
// advisory flock(2) of LockPath, released by unlock or when the process
// ends, however it ends. Where path is not a regular file or the lock
// file cannot be created (the directory is missing or read-only: the
// caller's checks say so), and on systems without flock, it locks nothing
// and returns a no-op unlock.
func Lock(ctx context.Context, path string) (unlock func(), err error) {
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return func() {}, nil // a directory, a device: Read refuses it, no lock file beside it
	}
	lp := LockPath(path)
	f, err := os.OpenFile(lp, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		// Another user's lock file (flock needs no write access to it).
		if f, err = os.Open(lp); err != nil {
			return func() {}, nil
		}
	}
	for {
		ok, err := tryLock(f)
		if err != nil || ok {
			if err != nil {
				f.Close()
				return func() {}, nil // a file system without locks: as before
			}
			return func() { f.Close() }, nil // closing the last descriptor releases the flock
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, ctx.Err()
		case <-time.After(lockPoll):
		}
	}
}
