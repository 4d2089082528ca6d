package serve

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/infscale/infscale/internal/boundedfile"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/recommend"
)

// Persisted is one target's state file under --state-dir: what a restart
// needs so that stabilisation windows and rate limits carry on (a restart in
// the middle of a down window does not scale down early).
type Persisted struct {
	// Version is the file format (1).
	Version int `json:"version"`
	// Desired is the last exported desired replicas; exported again at
	// startup before the first cycle.
	Desired int `json:"desired"`
	// Current is the last known current replicas (-1 unknown).
	Current int `json:"current"`
	// State is recommend's window history and scale events.
	State recommend.State `json:"state"`
	// SavedAt is the decision time it was saved at.
	SavedAt time.Time `json:"saved_at"`
}

// Store keeps one JSON file per target in Dir, written atomically (a
// temporary file renamed over the old one), named <target>.json.
type Store struct {
	Dir string
	// MaxAge discards files older than this at load (0: keep any): a state
	// saved days ago says nothing about the windows of today.
	MaxAge time.Duration
	// Now is the clock for MaxAge (default time.Now).
	Now func() time.Time
}

// NewStore creates dir if needed and checks that it is writable (a
// temporary file is created and removed): an unwritable state dir is an
// error at startup, not a warning every cycle.
func NewStore(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	f, err := os.CreateTemp(dir, ".infscale-write-check.*.tmp")
	if err != nil {
		return nil, fmt.Errorf("state dir %s is not writable: %w", dir, err)
	}
	name := f.Name()
	f.Close()
	if err := os.Remove(name); err != nil {
		return nil, fmt.Errorf("state dir %s: removing the write check %s: %w", dir, name, err)
	}
	return &Store{Dir: dir, MaxAge: time.Hour}, nil
}

func (s *Store) path(target string) string { return filepath.Join(s.Dir, target+".json") }

// Save writes target's state atomically.
func (s *Store) Save(target string, p Persisted) error {
	p.Version = 1
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(s.Dir, "."+target+".*.tmp")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(b); err != nil {
		tmp.Close()
		os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		os.Remove(tmp.Name())
		return err
	}
	return os.Rename(tmp.Name(), s.path(target))
}

// ErrStateTooOld is Load's error for a state file older than Store.MaxAge:
// it says nothing about today's windows, and is ignored (logged, not
// counted as a read error).
var ErrStateTooOld = errors.New("state file too old")

// MaxStateFileSize is the largest state file Load reads (config.MaxFileSize,
// 16 MiB): a state file holds at most a few thousand window entries.
const MaxStateFileSize = config.MaxFileSize

// MaxRestoredReplicas bounds a restored desired or current count: what
// recommend.State allows for its replica counts (int32, as the Kubernetes
// scale subresource). A larger value is not from infscale: the file is
// refused.
const MaxRestoredReplicas = math.MaxInt32

// Load reads target's state; nil without error when there is none, an
// error wrapping ErrStateTooOld when it is older than MaxAge. Only a regular file (or a symlink to one) of at most
// MaxStateFileSize bytes is read (a FIFO would block, /dev/zero exhaust
// memory); its "state" is decoded strictly by recommend.DecodeState, the
// envelope with unknown keys refused; desired outside 0..MaxRestoredReplicas
// and current outside -1..MaxRestoredReplicas are errors. Errors name the
// file.
func (s *Store) Load(target string) (*Persisted, error) {
	path := s.path(target)
	b, err := boundedfile.Read(path, MaxStateFileSize, "a state file", "a state file is JSON written by serve")
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var env struct {
		Version int             `json:"version"`
		Desired *int64          `json:"desired"`
		Current *int64          `json:"current"`
		State   json.RawMessage `json:"state"`
		SavedAt time.Time       `json:"saved_at"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&env); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if env.Version != 1 {
		return nil, fmt.Errorf("%s: unknown version %d (want 1)", path, env.Version)
	}
	if env.Desired == nil || *env.Desired < 0 || *env.Desired > MaxRestoredReplicas {
		return nil, fmt.Errorf("%s: desired %s: want 0..%d", path, int64Text(env.Desired), MaxRestoredReplicas)
	}
	cur := int64(-1)
	if env.Current != nil {
		cur = *env.Current
	}
	if cur < -1 || cur > MaxRestoredReplicas {
		return nil, fmt.Errorf("%s: current %d: want -1 (unknown) or 0..%d", path, cur, MaxRestoredReplicas)
	}
	if len(env.State) == 0 {
		return nil, fmt.Errorf("%s: no \"state\" object", path)
	}
	st, err := recommend.DecodeState(env.State, path+" (state)")
	if err != nil {
		return nil, err
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	if age := now().Sub(env.SavedAt); s.MaxAge > 0 && age > s.MaxAge {
		return nil, fmt.Errorf("%s: %w: saved %s ago, more than %s", path, ErrStateTooOld, age.Round(time.Second), s.MaxAge)
	}
	return &Persisted{Version: 1, Desired: int(*env.Desired), Current: int(cur), State: *st, SavedAt: env.SavedAt}, nil
}

func int64Text(p *int64) string {
	if p == nil {
		return "missing"
	}
	return strconv.FormatInt(*p, 10)
}
