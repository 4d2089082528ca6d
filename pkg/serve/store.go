package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

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

// NewStore creates dir if needed.
func NewStore(dir string) (*Store, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
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

// Load reads target's state; nil without error when there is none or it is
// older than MaxAge.
func (s *Store) Load(target string) (*Persisted, error) {
	b, err := os.ReadFile(s.path(target))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var p Persisted
	if err := json.Unmarshal(b, &p); err != nil {
		return nil, fmt.Errorf("%s: %w", s.path(target), err)
	}
	if p.Version != 1 {
		return nil, fmt.Errorf("%s: unknown version %d", s.path(target), p.Version)
	}
	now := time.Now
	if s.Now != nil {
		now = s.Now
	}
	if s.MaxAge > 0 && now().Sub(p.SavedAt) > s.MaxAge {
		return nil, nil
	}
	return &p, nil
}
