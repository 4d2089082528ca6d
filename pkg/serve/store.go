package serve

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/infscale/infscale/internal/atomicfile"
	"github.com/infscale/infscale/pkg/statefile"
)

// Persisted is one target's state file under --state-dir (pkg/statefile,
// the format decide --state writes too): what a restart needs so that
// stabilisation windows and rate limits carry on (a restart in the middle
// of a down window does not scale down early). Desired is exported again at
// startup before the first cycle.
type Persisted = statefile.File

// Store keeps one state file per target in Dir, named <target>.json.
type Store struct {
	Dir string
	// MaxAge discards files older than this at load (0: keep any): a state
	// saved days ago says nothing about the windows of today.
	MaxAge time.Duration
	// Now is the clock for MaxAge (default time.Now).
	Now func() time.Time
	// removedTemps are the stale temporary files NewStore removed
	// (removeStaleTemps), relative to Dir, sorted: serve logs them.
	removedTemps []string
}

// NewStore creates dir if needed, durably (mkdirStateDir), and checks
// that it is writable (a temporary file is created and removed): an
// unwritable state dir is an error at startup, not a warning every cycle.
func NewStore(dir string) (*Store, error) {
	const todo = "give --state-dir a directory serve can create and write in (one state file per target)"
	if err := mkdirStateDir(dir); err != nil {
		// os.MkdirAll's own error, reworded; not the sync's, which
		// MkdirDurable words itself ("DIR: created, but its parent not
		// synced: ...").
		if pe, ok := err.(*fs.PathError); ok {
			err = fmt.Errorf("%s: %w", pe.Path, pe.Err)
		}
		return nil, fmt.Errorf("state dir %s cannot be created: %w; %s", dir, err, todo)
	}
	f, err := os.CreateTemp(dir, ".infscale-write-check.*.tmp")
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, fmt.Errorf("state dir %s is not writable: %w; %s", dir, err, todo)
	}
	name := f.Name()
	f.Close()
	if err := os.Remove(name); err != nil {
		return nil, fmt.Errorf("state dir %s: removing the write check %s: %w", dir, name, err)
	}
	st := &Store{Dir: dir, MaxAge: time.Hour}
	st.removeStaleTemps(time.Now())
	return st, nil
}

// mkdirStateDir creates the state dir and its missing parents with the
// parent of each synced after (atomicfile.MkdirDurable; on Windows, which
// cannot sync a directory, only created): the durable tune/NAME.json
// writes sync tune/ and the state dir, not the entry naming a state dir
// this start created, so after a node crash the first files could be lost
// with their new directory. A variable for the test that it is the
// durable one.
var mkdirStateDir = atomicfile.MkdirDurable

// staleTempAge is the age from which a temporary file in the state dir is
// left over from a write that never finished: a write renames its file
// within milliseconds, and a younger one may be another serve's (sharing
// the directory) in flight.
const staleTempAge = 10 * time.Minute

// tempName matches the temporary files serve writes in the state dir and
// its tune/: a state write's .NAME.json.DIGITS.tmp (internal/atomicfile),
// a refused file's copy's .NAME.json.refused.DIGITS.tmp (keepRefused) and
// the write check's .infscale-write-check.DIGITS.tmp.
var tempName = regexp.MustCompile(`^\.(.+\.json(\.refused)?|infscale-write-check)\.[0-9]+\.tmp$`)

// removeStaleTemps removes the temporary files a serve killed mid-write
// (kill -9, the OOM killer) left behind, older than staleTempAge, in Dir
// and Dir/tune: nothing reads them, and a crash loop would pile up one per
// crash. What cannot be listed or removed is left (best effort).
func (s *Store) removeStaleTemps(now time.Time) {
	for _, sub := range []string{"", "tune"} {
		entries, err := os.ReadDir(filepath.Join(s.Dir, sub))
		if err != nil {
			continue
		}
		for _, e := range entries {
			if !e.Type().IsRegular() || !tempName.MatchString(e.Name()) {
				continue
			}
			fi, err := e.Info()
			if err != nil || now.Sub(fi.ModTime()) < staleTempAge {
				continue
			}
			name := filepath.Join(sub, e.Name())
			if os.Remove(filepath.Join(s.Dir, name)) == nil {
				s.removedTemps = append(s.removedTemps, name)
			}
		}
	}
}

func (s *Store) path(target string) string { return filepath.Join(s.Dir, target+".json") }

// Save writes target's state atomically (statefile.Write), not durably:
// it runs for every target every cycle, and a sync each (0.4 ms on a
// local SSD, milliseconds on a network disk) would cost seconds a cycle
// at 10,000 targets. A crash that loses the write misleads nothing: the
// file left is the previous cycle's (its windows one cycle older, its
// saved_at saying so), or, on a file system that leaves it empty or torn,
// one Load refuses (strict decoding: the target starts fresh, and in
// Prometheus mode is rebuilt from infscale's series).
func (s *Store) Save(target string, p Persisted) error {
	return statefile.Write(s.path(target), p)
}

// ErrStateTooOld is Load's error for a state file older than Store.MaxAge:
// it says nothing about today's windows, and is ignored (logged, not
// counted as a read error).
var ErrStateTooOld = errors.New("state file too old")

// ErrStateFromFuture is Load's error for a state file saved more than
// MaxClockSkew ahead of the clock (a clock stepped back, a node whose
// clock runs ahead): its age cannot be judged, and a file saved in 2099
// would never grow older than MaxAge. It wraps ErrStateTooOld (the file
// is ignored as stale), and serve logs it as a warning: a clock to check.
// Its text says "saved in the future", not "too old".
var ErrStateFromFuture error = stateFromFuture{}

// stateFromFuture is ErrStateFromFuture: an error of its own text that
// is ErrStateTooOld to errors.Is.
type stateFromFuture struct{}

func (stateFromFuture) Error() string        { return "state file saved in the future" }
func (stateFromFuture) Is(target error) bool { return target == ErrStateTooOld }

// MaxClockSkew is how far ahead of the clock a state file's saved_at may
// lie and still be restored: 5 minutes (Kerberos's default clock skew),
// two nodes' clocks a little apart under one state volume.
const MaxClockSkew = 5 * time.Minute

// MaxStateFileSize is the largest state file Load reads (statefile.MaxSize,
// 16 MiB): a state file holds at most a few thousand window entries.
const MaxStateFileSize = statefile.MaxSize

// MaxRestoredReplicas bounds a restored desired or current count
// (statefile.MaxReplicas: int32, as the Kubernetes scale subresource). A
// larger value is not from infscale: the file is refused.
const MaxRestoredReplicas = statefile.MaxReplicas

// refusedSuffix names the copy of a state file Load (or the tuning state
// a tune/ file) refused, kept beside the target's file (NAME.json.refused,
// the last one refused) since the next save overwrites the file.
const refusedSuffix = ".refused"

// keepRefused copies data, the bytes of the file at path that were read
// and refused with err, to path+refusedSuffix (replacing an earlier copy),
// and returns err saying where they are kept, or that they are not. An
// empty file (what a power loss after an unsynced save leaves) is not
// copied: nothing to keep, and an earlier copy (a newer infscale's file)
// would be lost.
func keepRefused(path string, data []byte, err error) error {
	if len(bytes.TrimSpace(data)) == 0 {
		return err
	}
	kept := path + refusedSuffix
	// Not durable: a copy to inspect, which no start reads.
	if werr := atomicfile.Write(kept, data); werr != nil {
		return fmt.Errorf("%w; no copy of its bytes kept: %v", err, werr)
	}
	return fmt.Errorf("%w; its bytes are kept as %s (the target's next save overwrites the file)", err, kept)
}

// Load reads target's state (statefile.Read: a regular file of at most
// MaxStateFileSize bytes, decoded strictly, duplicate keys refused, desired
// outside 0..MaxRestoredReplicas and current outside -1..MaxRestoredReplicas
// errors); nil without error when there is none, an error wrapping
// ErrStateTooOld when it is older than MaxAge, and ErrStateFromFuture too
// when it was saved more than MaxClockSkew ahead of the clock. The bytes of a file it read
// and refused are copied to NAME.json.refused (refusedSuffix; replacing an
// earlier copy) and the error says so. Errors name the file.
func (s *Store) Load(target string) (*Persisted, error) {
	p, err := statefile.Read(s.path(target))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if de, refused := errors.AsType[*statefile.DecodeError](err); refused {
		// The next save overwrites it: keep it to inspect, or to put back
		// under the infscale that wrote it (a newer one's file). A copy of
		// the bytes refused, not a rename: the file stays where it is (a
		// symlink stays a symlink, the saves still go through it), and a
		// file another serve sharing the directory saved since the read is
		// never moved away under it.
		data := de.Data
		de.Data = nil // the error outlives the copy (logged)
		return nil, keepRefused(s.path(target), data, err)
	}
	if err != nil {
		return nil, err
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	age := now().Sub(p.SavedAt)
	if s.MaxAge > 0 && age > s.MaxAge {
		return nil, fmt.Errorf("%s: %w: saved %s ago, more than %s", s.path(target), ErrStateTooOld, age.Round(time.Second), s.MaxAge)
	}
	if s.MaxAge > 0 && -age > MaxClockSkew {
		return nil, fmt.Errorf("%s: %w: its saved_at is %s ahead of this clock, more than the %s skew allowed (%s against %s): check the node's clock (a clock stepped back, nodes whose clocks differ); the next save replaces the file",
			s.path(target), ErrStateFromFuture, (-age).Round(time.Second), MaxClockSkew, p.SavedAt.UTC().Format(time.RFC3339), now().UTC().Format(time.RFC3339))
	}
	return p, nil
}

// Unclaimed returns the names of the state files in Dir that belong to none
// of keys (the configured targets' keys: a name, or a P/D pool's
// name@role), sorted: regular files named <key>.json, not the hidden
// temporary files of a write in progress. serve leaves them in place
// (they are the user's data; a target configured again under that name
// restores from its file while it is younger than MaxAge).
func (s *Store) Unclaimed(keys []string) ([]string, error) {
	entries, err := os.ReadDir(s.Dir)
	if err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		key, ok := strings.CutSuffix(name, ".json")
		if !ok || strings.HasPrefix(name, ".") || !e.Type().IsRegular() || slices.Contains(keys, key) {
			continue
		}
		out = append(out, name)
	}
	return out, nil // os.ReadDir sorts by name
}
