// Package statefile is the one on-disk form of a target's decision state,
// for `decide --state` and serve's --state-dir: a versioned JSON envelope
// around recommend.State, read through internal/boundedfile (a regular file
// of at most MaxSize bytes) and decoded strictly (Decode), written in one
// atomic step (a temporary file renamed over the old one). The format lives
// here, not in pkg/recommend, which stays free of files and formats.
package statefile

import (
	"encoding/json"
	"math"
	"time"

	"github.com/infscale/infscale/internal/atomicfile"
	"github.com/infscale/infscale/internal/boundedfile"
	"github.com/infscale/infscale/pkg/recommend"
)

// Version is the format Write writes and Decode reads (a document without a
// version is read as the bare recommend.State decide wrote before).
const Version = 1

// MaxSize is the largest state file Read reads: 16 MiB (a state file holds
// at most a few thousand window entries, some 100 bytes each).
const MaxSize = 16 << 20

// MaxReplicas bounds Desired and Current: what recommend.State allows for
// its replica counts (int32, as the Kubernetes scale subresource).
const MaxReplicas = math.MaxInt32

// File is one target's state file:
//
//	{"version":1,"desired":3,"current":2,"state":{...recommend.State...},"saved_at":"2026-11-30T08:00:00Z"}
type File struct {
	// Version is the format (Version).
	Version int `json:"version"`
	// Desired is the last desired replicas infscale output (0..MaxReplicas).
	Desired int `json:"desired"`
	// Current is the last known current replicas (-1 unknown).
	Current int `json:"current"`
	// State is recommend's window history and scale events.
	State recommend.State `json:"state"`
	// SavedAt is the decision time it was saved at.
	SavedAt time.Time `json:"saved_at"`
	// HeldReader identifies how serve read the target's held count when it
	// saved the file (16 hex digits; serve's heldReader): a restore under
	// another reader drops State.HeldZeroAt, the known 0 it records being
	// the other reader's. "" (decide --state, a rebuild, a file of an
	// older serve): not compared.
	HeldReader string `json:"held_reader,omitempty"`
}

// Read reads and decodes the state file at path (Decode). Errors: those of
// boundedfile.Read (fs.ErrNotExist as it is, a non-regular or too large
// file named), and Decode's.
func Read(path string) (*File, error) {
	data, err := boundedfile.Read(path, MaxSize, "a state file", "a state file is the JSON infscale writes (decide --state, serve --state-dir)")
	if err != nil {
		return nil, err
	}
	f, err := Decode(data, path)
	if err != nil {
		return nil, &DecodeError{err: err, Data: data}
	}
	return f, nil
}

// DecodeError is Read's error for a file it read but Decode refused
// (corrupt, written by a newer infscale, impossible values), as opposed to
// one it could not read (missing, unreadable, not regular, too large). Its
// text is Decode's; Data holds the bytes Decode refused (serve keeps a copy
// of them).
type DecodeError struct {
	err  error
	Data []byte
}

func (e *DecodeError) Error() string { return e.err.Error() }
func (e *DecodeError) Unwrap() error { return e.err }

// Write writes f (Version set) to path atomically (atomicfile.Write), so a
// reader never sees half a file; serve's per-cycle saves.
func Write(path string, f File) error {
	return write(path, f, atomicfile.Write)
}

// WriteDurable is Write synced to the disk (atomicfile.WriteDurable): a
// power loss after it returns keeps the file (decide's --state, which a
// later run reads and refuses when empty).
func WriteDurable(path string, f File) error {
	return write(path, f, atomicfile.WriteDurable)
}

func write(path string, f File, put func(string, []byte) error) error {
	f.Version = Version
	b, err := json.Marshal(f)
	if err != nil {
		return err
	}
	return put(path, append(b, '\n'))
}
