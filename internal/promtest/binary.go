package promtest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Tool names a binary of the tools module.
type Tool string

// The tools.
const (
	Prometheus Tool = "prometheus"
	Promtool   Tool = "promtool"
)

func (tl Tool) env() string {
	if tl == Promtool {
		return "INFSCALE_PROMTOOL"
	}
	return "INFSCALE_PROMETHEUS"
}

var (
	buildMu  sync.Mutex
	builtBin = map[Tool]string{}
)

// Binary returns the path of tool, building it if needed (see the package
// doc). It skips the test when the binary cannot be found or built, or
// fails it when $CI is "true".
func Binary(t testing.TB, tool Tool) string {
	t.Helper()
	path, err := findOrBuild(tool)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("promtest: %s unavailable under CI=true: %v", tool, err)
		}
		t.Skipf("promtest: %s unavailable (run `make tools` or set %s): %v", tool, tool.env(), err)
	}
	return path
}

func findOrBuild(tool Tool) (string, error) {
	if p := os.Getenv(tool.env()); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w", tool.env(), p, err)
		}
		return p, nil
	}
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	if p := filepath.Join(root, "tools", "bin", string(tool)); isExecutable(p) {
		return p, nil
	}
	buildMu.Lock()
	defer buildMu.Unlock()
	if p, ok := builtBin[tool]; ok {
		return p, nil
	}
	p, err := build(root, tool)
	if err != nil {
		return "", err
	}
	builtBin[tool] = p
	return p, nil
}

// BuildTags are the build tags the pinned Prometheus and promtool are built
// with, here and by the Makefile's tools target: remove_all_sd leaves out
// every service-discovery plugin but static, file and http (Prometheus
// >= 3.10), and with them the cloud SDKs that were most of the build.
const BuildTags = "remove_all_sd"

// build compiles tool from the tools module into the user cache directory,
// keyed by the hash of tools/go.sum and BuildTags (a version bump builds anew), writing
// to a temporary name and renaming so concurrent test binaries never see a
// half-written file.
func build(root string, tool Tool) (string, error) {
	sum, err := os.ReadFile(filepath.Join(root, "tools", "go.sum"))
	if err != nil {
		return "", fmt.Errorf("tools module: %w", err)
	}
	h := sha256.Sum256(append(sum, BuildTags...))
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "infscale", "promtest", hex.EncodeToString(h[:8]))
	out := filepath.Join(dir, string(tool))
	if isExecutable(out) {
		return out, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	tmp, err := os.CreateTemp(dir, string(tool)+".*.tmp")
	if err != nil {
		return "", err
	}
	tmp.Close()
	defer os.Remove(tmp.Name())
	cmd := exec.Command("go", "build", "-C", filepath.Join(root, "tools"), "-tags", BuildTags, "-o", tmp.Name(),
		"github.com/prometheus/prometheus/cmd/"+string(tool))
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("go build %s: %w\n%s", tool, err, b)
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return "", err
	}
	return out, nil
}

// repoRoot walks up from the working directory (a package directory under
// go test) to the directory holding tools/go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "tools", "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no tools/go.mod above the working directory")
		}
		dir = parent
	}
}

func isExecutable(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}
