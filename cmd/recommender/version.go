package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
)

// version is the module version of the build ("devel" when the build has
// none, as under go run or go test): the version label of infscale_build_info.
func version() string { return moduleVersion(buildInfo()) }

// buildVersion and buildRevision are set at link time by builds without
// VCS information (the image: -ldflags "-X main.buildVersion=v0.3.0
// -X main.buildRevision=<commit>", see the Dockerfile); empty otherwise, when
// the build's own module version and vcs.revision are used.
var buildVersion, buildRevision string

func moduleVersion(bi *debug.BuildInfo) string {
	if bi == nil || bi.Main.Version == "" || bi.Main.Version == "(devel)" {
		if buildVersion != "" {
			return buildVersion
		}
		return "devel"
	}
	return bi.Main.Version
}

// versionLine is what --version prints: the module version, the VCS
// revision, its commit time and whether the work tree was modified (from the
// build's vcs.* settings, present when built from a checkout), and the Go
// version, e.g. "infscale v0.3.0 (revision 6631eae1c2d4, 2026-11-30T18:02:11Z, modified) go1.26.0";
// without a revision it says so.
func versionLine(bi *debug.BuildInfo) string {
	var rev, at string
	modified := false
	if bi != nil {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if rev == "" {
		rev = buildRevision
	}
	vcs := []string{"revision unknown"} // built with -buildvcs=false or not from a checkout
	if rev != "" {
		vcs = []string{"revision " + rev[:min(12, len(rev))]}
	}
	if at != "" {
		vcs = append(vcs, at)
	}
	if modified {
		vcs = append(vcs, "modified")
	}
	line := "infscale " + moduleVersion(bi) + " (" + strings.Join(vcs, ", ") + ")"
	return fmt.Sprintf("%s %s", line, runtime.Version())
}
