package tools

import (
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"golang.org/x/mod/modfile"
)

// held are the modules one go.mod keeps at another version than the rest
// of the repository's, by go.mod directory (relative to the repository),
// each with why. Everywhere else a module required by two go.mod files has
// one version in both: Go's build cache is keyed by a package's source and
// its dependencies' compiled output, so one version differing (golang.org/x/sys
// in one module, say) recompiles every package above it, client-go and
// Kubernetes' API types included, in that module's build. Aligned, a cold
// `make test` compiles about 240 MB of Go source instead of 330 MB
// (docs/evaluation/PERFORMANCE.md, "CI: a fresh `.ci/run`").
var held = map[string]map[string]string{
	"deploy/kedae2e": {
		"github.com/prometheus/prometheus":    "v0.316.0 needs client_golang v1.25.0, whose API v1 Query and QueryRange return four values; KEDA v2.21.0's predictkube scaler, in the scalers package the test builds, takes three",
		"github.com/prometheus/client_golang": "as github.com/prometheus/prometheus",
	},
	"tools": {
		"github.com/gobwas/glob": "v1.0.0 (helm's and KEDA's) has no glob.Glob, which the OpenTelemetry collector's confmap in Prometheus v0.316.0's build uses",
	},
}

// TestModulesAligned checks that the repository's go.mod files require each
// shared module at one version, but for the held ones (held above); run
// `go -C DIR get MODULE@VERSION && go -C DIR mod tidy` to align one.
func TestModulesAligned(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	versions := map[string]map[string][]string{} // module -> version -> go.mod dirs
	heldAt := map[string]map[string]string{}     // go.mod dir -> held module -> its version there
	var dirs []string
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && path != root && (strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || d.Name() != "go.mod" {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		f, err := modfile.Parse(path, data, nil) // not ParseLax, which skips replace directives
		if err != nil {
			return err
		}
		dir, _ := filepath.Rel(root, filepath.Dir(path))
		dir = filepath.ToSlash(dir)
		dirs = append(dirs, dir)
		// A requirement a replace directive points at a published version
		// (kubee2e's v0.0.0 staging modules => v0.37.2) builds that version.
		replaced := map[string]string{}
		for _, r := range f.Replace {
			if r.New.Version != "" {
				replaced[r.Old.Path+"@"+r.Old.Version] = r.New.Version
			}
		}
		for _, r := range f.Require {
			if v, ok := replaced[r.Mod.Path+"@"+r.Mod.Version]; ok {
				r.Mod.Version = v
			} else if v, ok := replaced[r.Mod.Path+"@"]; ok {
				r.Mod.Version = v
			}
			if strings.HasPrefix(r.Mod.Path, "github.com/infscale/infscale") {
				continue // the repository's own module, replaced by its directory
			}
			if held[dir][r.Mod.Path] != "" {
				if heldAt[dir] == nil {
					heldAt[dir] = map[string]string{}
				}
				heldAt[dir][r.Mod.Path] = r.Mod.Version
				continue
			}
			if versions[r.Mod.Path] == nil {
				versions[r.Mod.Path] = map[string][]string{}
			}
			versions[r.Mod.Path][r.Mod.Version] = append(versions[r.Mod.Path][r.Mod.Version], dir)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 2 {
		t.Fatalf("found the go.mod files %v under %s; want the repository's six", dirs, root)
	}
	var mods []string
	for m := range versions {
		mods = append(mods, m)
	}
	sort.Strings(mods)
	for _, m := range mods {
		if len(versions[m]) < 2 {
			continue
		}
		var vs []string
		for v, ds := range versions[m] {
			vs = append(vs, v+" in "+strings.Join(ds, ", "))
		}
		sort.Strings(vs)
		t.Errorf("%s is required at %d versions: %s; align them (go -C DIR get %s@VERSION, then go mod tidy) or add it to held with why", m, len(vs), strings.Join(vs, "; "), m)
	}
	// A held module that no longer differs goes from held.
	for dir, ms := range held {
		for m := range ms {
			mine := heldAt[dir][m]
			if mine == "" {
				t.Errorf("held: %s/go.mod no longer requires %s; remove the entry", dir, m)
				continue
			}
			if _, same := versions[m][mine]; same {
				t.Errorf("held: %s/go.mod requires %s at %s as the others do; remove the entry", dir, m, mine)
			}
		}
	}
}
