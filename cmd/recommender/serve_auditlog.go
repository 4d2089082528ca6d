package main

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/infscale/infscale/internal/appendlog"
)

// AuditLogFlags are serve's --audit-log and its rotation, named and meant
// as the kube-apiserver's --audit-log-maxsize, --audit-log-maxbackup,
// --audit-log-maxage and --audit-log-compress (appendlog.Rotation). Unlike
// the kube-apiserver's, whose 0 takes lumberjack's 100 MB, a maxsize of 0
// (the default) rotates nothing (docs/serve.md says why).
type AuditLogFlags struct {
	AuditLog          string `name:"audit-log" type:"path" placeholder:"FILE" help:"Append one JSON line per decision to this file (created if absent). A named pipe needs its reader running before serve starts; lines a stalled reader does not take are dropped and counted (infscale_query_errors_total{reason=\"audit_write\"}), never holding up a decision."`
	AuditLogMaxSize   int    `name:"audit-log-maxsize" placeholder:"MB" help:"Rotate --audit-log (a regular file) before a line would take it past this many megabytes (MiB): the file is renamed NAME-TIME.EXT beside it (TIME: UTC to the millisecond) and a new one begun; whole lines in each. 0 (default): no rotation."`
	AuditLogMaxBackup int    `name:"audit-log-maxbackup" placeholder:"N" help:"Rotated files to keep, the newest (0, default: all). Needs --audit-log-maxsize."`
	AuditLogMaxAge    int    `name:"audit-log-maxage" placeholder:"DAYS" help:"Days to keep a rotated file, by the time in its name (0, default: no limit). Needs --audit-log-maxsize."`
	AuditLogCompress  bool   `name:"audit-log-compress" help:"Gzip rotated files (NAME-TIME.EXT.gz). Needs --audit-log-maxsize."`
}

// rotationFlags are the flags that need --audit-log-maxsize, in help order.
var rotationFlags = []string{"audit-log-maxbackup", "audit-log-maxage", "audit-log-compress"}

// checkRotation refuses (exit 2, naming the flag) a negative bound, one
// past appendlog's limits (lumberjack's sums would overflow), a rotation
// flag without --audit-log, and one that needs
// --audit-log-maxsize without it: each would be ignored. A flag given its
// default (0, false) is taken anywhere (kube-apiserver's are).
func (f *AuditLogFlags) checkRotation(given map[string]bool) error {
	for _, b := range []struct {
		name string
		v    int
		unit string
		max  int64  // 0: none
		over string // what a value past max would do
	}{
		{"audit-log-maxsize", f.AuditLogMaxSize, "megabytes, e.g. 100 (0: no rotation)", appendlog.MaxSizeLimit, "8 EiB: more overflows the rotation's byte count, and every line would be refused"},
		{"audit-log-maxbackup", f.AuditLogMaxBackup, "files, e.g. 10 (0: keep all)", 0, ""},
		{"audit-log-maxage", f.AuditLogMaxAge, "days, e.g. 30 (0: no limit)", appendlog.MaxAgeLimit, "292 years: more overflows the age cutoff, and every rotated file would be removed; 0 keeps them with no limit"},
	} {
		if b.v < 0 {
			return invalidf("--%s %d: can't be a negative number: want 0 or more %s", b.name, b.v, b.unit)
		}
		if b.max > 0 && int64(b.v) > b.max {
			return invalidf("--%s %d: want at most %d (%s)", b.name, b.v, b.max, b.over)
		}
	}
	// A flag given its default (0, false) asks for nothing and is taken
	// alone: a template that passes all four, rotation off, must start.
	set := map[string]bool{
		"audit-log-maxsize":   given["audit-log-maxsize"] && f.AuditLogMaxSize != 0,
		"audit-log-maxbackup": given["audit-log-maxbackup"] && f.AuditLogMaxBackup != 0,
		"audit-log-maxage":    given["audit-log-maxage"] && f.AuditLogMaxAge != 0,
		"audit-log-compress":  given["audit-log-compress"] && f.AuditLogCompress,
	}
	if err := needsFlag(set, "audit-log-maxsize", f.AuditLog != "", "--audit-log"); err != nil {
		return err
	}
	for _, name := range rotationFlags {
		if err := needsFlag(set, name, f.AuditLogMaxSize > 0, "--audit-log-maxsize above 0"); err != nil {
			return err
		}
	}
	return nil
}

// rotation is what the flags ask of appendlog.Open.
func (f *AuditLogFlags) rotation() appendlog.Rotation {
	return appendlog.Rotation{MaxSize: f.AuditLogMaxSize, MaxBackups: f.AuditLogMaxBackup, MaxAge: f.AuditLogMaxAge, Compress: f.AuditLogCompress}
}

// checkRotatable refuses (exit 2) --audit-log-maxsize on a path that is
// not a regular file (appendlog.Rotatable), before anything is bound or
// created.
func (f *AuditLogFlags) checkRotatable() error {
	if f.AuditLogMaxSize == 0 || f.AuditLog == "" {
		return nil
	}
	return f.auditOpenError(appendlog.Rotatable(f.AuditLog))
}

// auditOpenError is appendlog.Open's error for --audit-log as serve
// reports it: bad input (a directory, rotation of a file that is not a
// regular one) exits 2, what the environment refuses (another serve
// writing the file among it) exits 1.
func (f *AuditLogFlags) auditOpenError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, appendlog.ErrDirectory):
		return invalidf("--audit-log %v", err)
	case errors.Is(err, appendlog.ErrNotRegular) || errors.Is(err, appendlog.ErrSymlink):
		return invalidf("--audit-log-maxsize: --audit-log %v", err)
	case errors.Is(err, appendlog.ErrDirNotWritable):
		return fmt.Errorf("--audit-log-maxsize: --audit-log %w", err) // the environment's refusal: exit 1
	case errors.Is(err, appendlog.ErrNoReader) || errors.Is(err, appendlog.ErrLocked):
		return fmt.Errorf("--audit-log %w", err) // runtime: exit 1
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	return fmt.Errorf("--audit-log %s: %w; give a file serve may create or append to", f.AuditLog, err) // runtime I/O: exit 1, as --state-dir
}
