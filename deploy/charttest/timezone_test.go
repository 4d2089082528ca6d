package charttest

import (
	"archive/zip"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestTuneTimeZoneHelmMachineWithoutLegacyNames: the API server loads
// tune.timeZone from the database Go embeds in kube-apiserver (its
// `import _ "time/tzdata"`), which holds the IANA backward names
// (US/Eastern, Asia/Calcutta, Europe/Kiev) beside the canonical ones.
// Helm embeds none and loads from the machine's /usr/share/zoneinfo, where
// Debian 13 and Ubuntu 24.04 put those names in tzdata-legacy, not
// installed by default. Such a machine (simulated here: a zoneinfo with
// America/New_York and Europe/Berlin only, bind-mounted over
// /usr/share/zoneinfo in a user and mount namespace, GOROOT unset as in
// Helm's -trimpath build) must still render a zone the API server takes;
// a name no database holds (Europe/Berln) is still refused there.
func TestTuneTimeZoneHelmMachineWithoutLegacyNames(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("simulates a Linux machine's /usr/share/zoneinfo")
	}
	if _, err := exec.LookPath("unshare"); err != nil {
		t.Skip("no unshare: cannot simulate another machine's zoneinfo")
	}
	dir := t.TempDir()
	for _, z := range []string{"America/New_York", "Europe/Berlin"} {
		b, err := os.ReadFile(filepath.Join("/usr/share/zoneinfo", z))
		if err != nil {
			t.Skipf("this machine's zoneinfo: %v", err)
		}
		if err := os.MkdirAll(filepath.Join(dir, filepath.Dir(z)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, z), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(zone string) string {
		cmd := exec.Command("unshare", "-rm", "sh", "-c", `mount --bind "$1" /usr/share/zoneinfo && shift && exec "$@"`,
			"sh", dir, os.Args[0], "-test.run=^TestTuneTimeZoneOnThisMachine$", "-test.v")
		cmd.Env = append(os.Environ(), "GOROOT=/nonexistent", "INFSCALE_TEST_TIMEZONE="+zone)
		out, err := cmd.CombinedOutput()
		if strings.Contains(string(out), "unshare: ") || strings.Contains(string(out), "mount: ") {
			t.Skipf("no user and mount namespace here: %s", out)
		}
		if strings.Contains(string(out), "PRECONDITION") {
			t.Fatalf("the simulated machine is not one without legacy names: %s", out)
		}
		_ = err
		return string(out)
	}
	zones, err := os.ReadFile(chartTimeZones)
	if err != nil {
		t.Fatal(err)
	}
	for _, tz := range []string{"US/Eastern", "Asia/Calcutta", "Europe/Kiev", "America/Coyhaique"} {
		if !slices.Contains(strings.Split(string(zones), "\n"), tz) {
			t.Errorf("%s lacks %s (IANA 2025b), which the API server takes; regenerate it with a Go that has it: %s", chartTimeZones, tz, regenerateTimeZones)
			continue
		}
		if out := run(tz); !strings.Contains(out, "RENDERED "+tz) {
			t.Errorf("timeZone %q, which the API server takes, on a Helm machine without it: %s", tz, out)
		}
	}
	if out := run("Europe/Berln"); !strings.Contains(out, "REFUSED") || !strings.Contains(out, `tune.timeZone: \"Europe/Berln\"`) {
		t.Errorf("timeZone Europe/Berln on that machine: %s, want the render refused naming tune.timeZone", out)
	}
}

// TestTuneTimeZoneOnThisMachine renders INFSCALE_TEST_TIMEZONE as
// tune.timeZone with this process's time zone database, printing RENDERED
// or REFUSED: TestTuneTimeZoneHelmMachineWithoutLegacyNames runs it on a
// simulated machine.
func TestTuneTimeZoneOnThisMachine(t *testing.T) {
	tz := os.Getenv("INFSCALE_TEST_TIMEZONE")
	if tz == "" {
		t.Skip("run by TestTuneTimeZoneHelmMachineWithoutLegacyNames")
	}
	_, nyErr := time.LoadLocation("America/New_York")
	_, usErr := time.LoadLocation("US/Eastern")
	if nyErr != nil || usErr == nil {
		fmt.Printf("PRECONDITION America/New_York: %v, US/Eastern: %v\n", nyErr, usErr)
		return
	}
	_, err := tryRender("tune: {enabled: true, results: {claimName: tune-results}, timeZone: '" + tz + "'}\n" + tunedTarget)
	if err != nil {
		fmt.Printf("REFUSED %q\n", err.Error())
		return
	}
	fmt.Printf("RENDERED %s\n", tz)
}

// chartTimeZones is the chart's list of the zone names the API server
// takes (templates' infscale.checkTimeZone).
var chartTimeZones = filepath.Join(chartDir, "timezones.txt")

// timeZonesHeader opens timezones.txt.
const timeZonesHeader = "# The zone names of Go's time zone database, which kube-apiserver embeds\n" +
	"# (time/tzdata) for CronJob timeZone: infscale.checkTimeZone takes these.\n" +
	"# Generated: " + regenerateTimeZones + "\n"

// regenerateTimeZones is the one command that rewrites timezones.txt.
const regenerateTimeZones = "go -C deploy/charttest test -run TestChartTimeZonesMatchGo -update"

// goZoneNames returns the zone names of the running Go's database
// (GOROOT/lib/time/zoneinfo.zip, the data time/tzdata embeds), sorted, and
// the file read. GOROOT is runtime.GOROOT(), else `go env GOROOT` (a test
// binary built with -trimpath knows none).
func goZoneNames() ([]string, string, error) {
	goroot := runtime.GOROOT()
	if goroot == "" {
		out, err := exec.Command("go", "env", "GOROOT").Output()
		if err != nil {
			return nil, "", fmt.Errorf("no GOROOT: runtime.GOROOT() is empty and go env GOROOT: %v", err)
		}
		goroot = strings.TrimSpace(string(out))
	}
	file := filepath.Join(goroot, "lib", "time", "zoneinfo.zip")
	z, err := zip.OpenReader(file)
	if err != nil {
		return nil, file, err
	}
	defer z.Close()
	var names []string
	for _, f := range z.File {
		if !f.FileInfo().IsDir() {
			names = append(names, f.Name)
		}
	}
	slices.Sort(names)
	return names, file, nil
}

// TestChartTimeZonesMatchGo: timezones.txt names every zone of Go's
// database and no other, sorted, under timeZonesHeader. A Go release with
// a newer IANA release fails it, naming the zones it adds, until the list
// is regenerated with regenerateTimeZones (-update rewrites it). IANA
// never removes a name (an old one moves to its backward file, which Go's
// database holds): names the list has and this Go lacks mean a newer Go
// wrote it, and -update refuses to drop them rather than make the chart
// refuse zones a newer kube-apiserver takes.
func TestChartTimeZonesMatchGo(t *testing.T) {
	names, file, err := goZoneNames()
	if err != nil {
		if *update {
			t.Fatalf("cannot regenerate %s: Go's time zone database %s: %v", chartTimeZones, file, err)
		}
		t.Skipf("Go's time zone database %s: %v", file, err)
	}
	got, err := os.ReadFile(chartTimeZones)
	if err != nil {
		t.Fatal(err)
	}
	var listed []string
	for _, l := range strings.Split(string(got), "\n") {
		if l != "" && !strings.HasPrefix(l, "#") {
			listed = append(listed, l)
		}
	}
	added := slices.DeleteFunc(slices.Clone(names), func(n string) bool { return slices.Contains(listed, n) })
	dropped := slices.DeleteFunc(slices.Clone(listed), func(n string) bool { return slices.Contains(names, n) })
	want := timeZonesHeader + strings.Join(names, "\n") + "\n"
	switch {
	case *update && len(dropped) > 0:
		t.Fatalf("%s: not regenerated with %s, whose database (%s) lacks %d of its zones %q: a newer Go wrote it; regenerate with that Go or a newer one", chartTimeZones, runtime.Version(), file, len(dropped), dropped)
	case *update:
		if err := os.WriteFile(chartTimeZones, []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: %d zone names of %s's database, %d new: %q", chartTimeZones, len(names), runtime.Version(), len(added), added)
	case len(added) > 0:
		t.Errorf("%s lacks %d zone names of %s's database (%s): %q; the chart refuses them as tune.timeZone though a kube-apiserver built with this Go takes them. Regenerate (and commit the file): %s", chartTimeZones, len(added), runtime.Version(), file, added, regenerateTimeZones)
	case len(dropped) > 0:
		t.Logf("%s has %d zone names %s's database lacks (%q): a newer Go wrote it; keep them", chartTimeZones, len(dropped), runtime.Version(), dropped)
	case string(got) != want:
		t.Errorf("%s holds %s's zone names but not as generated (header, order); regenerate: %s", chartTimeZones, runtime.Version(), regenerateTimeZones)
	}
	// Each name passes the API server's own name check before it loads
	// the zone (k8s.io/kubernetes pkg/apis/batch/validation,
	// validateTimeZone): components of 1-14 of A-Za-z.-_0-9+, none "."
	// or ".." or starting with "-".
	component := regexp.MustCompile(`^[A-Za-z.\-_0-9+]{1,14}$`)
	for _, n := range names {
		for _, c := range strings.Split(n, "/") {
			if !component.MatchString(c) || c == "." || c == ".." || strings.HasPrefix(c, "-") {
				t.Errorf("%s: the API server refuses its component %q", n, c)
			}
		}
	}
	for _, tz := range []string{"US/Eastern", "Europe/Kyiv", "UTC", "Etc/Zulu"} {
		if !slices.Contains(names, tz) {
			t.Errorf("Go's database has no %s", tz)
		}
	}
}
