package main

import (
	"bytes"
	"context"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
)

// TestVersionLine: the module version, the first 12 hex digits of the VCS
// revision, its time and "modified" come from the build's settings; a build
// without them (go run, go test, -buildvcs=false) reads devel and says the
// revision is unknown.
func TestVersionLine(t *testing.T) {
	bi := &debug.BuildInfo{Main: debug.Module{Version: "v0.3.0"}, Settings: []debug.BuildSetting{
		{Key: "vcs", Value: "git"},
		{Key: "vcs.revision", Value: "6631eae1c2d4e5f60718293a4b5c6d7e8f901234"},
		{Key: "vcs.time", Value: "2026-11-30T18:02:11Z"},
		{Key: "vcs.modified", Value: "true"},
	}}
	want := "infscale v0.3.0 (revision 6631eae1c2d4, 2026-11-30T18:02:11Z, modified) " + runtime.Version()
	if got := versionLine(bi); got != want {
		t.Errorf("versionLine = %q, want %q", got, want)
	}
	for _, bi := range []*debug.BuildInfo{nil, {Main: debug.Module{Version: "(devel)"}}} {
		if got, want := versionLine(bi), "infscale devel (revision unknown) "+runtime.Version(); got != want {
			t.Errorf("versionLine(%v) = %q, want %q", bi, got, want)
		}
	}
}

// TestVersionLinked: a build without VCS settings (the image's, -buildvcs=false)
// takes the version and revision given to the linker.
func TestVersionLinked(t *testing.T) {
	defer func(v, r string) { buildVersion, buildRevision = v, r }(buildVersion, buildRevision)
	buildVersion, buildRevision = "v0.3.0", "6631eae1c2d4e5f60718293a4b5c6d7e8f901234"
	want := "infscale v0.3.0 (revision 6631eae1c2d4) " + runtime.Version()
	if got := versionLine(&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}); got != want {
		t.Errorf("versionLine = %q, want %q", got, want)
	}
}

// TestVersionFlag: --version prints one line and exits 0.
func TestVersionFlag(t *testing.T) {
	var out, errb bytes.Buffer
	if code := run(context.Background(), []string{"--version"}, strings.NewReader(""), &out, &errb); code != 0 {
		t.Fatalf("--version: exit %d: %s", code, errb.String())
	}
	if s := out.String(); !strings.HasPrefix(s, "infscale ") || !strings.HasSuffix(s, runtime.Version()+"\n") {
		t.Errorf("--version printed %q, want \"infscale VERSION ... %s\"", s, runtime.Version())
	}
}
