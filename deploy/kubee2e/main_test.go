package kubee2e

import (
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"k8s.io/klog/v2"
)

// TestMain silences the API server's klog output (thousands of lines per
// server start) unless -test.v is given, and removes the serve tests'
// bin/infscale at the end.
func TestMain(m *testing.M) {
	flag.Parse()
	if !testing.Verbose() {
		fs := flag.NewFlagSet("klog", flag.ContinueOnError)
		klog.InitFlags(fs)
		_ = fs.Set("logtostderr", "false")
		_ = fs.Set("stderrthreshold", "FATAL")
		klog.SetOutput(io.Discard)
	}
	code := m.Run()
	if binPath != "" {
		_ = os.RemoveAll(filepath.Dir(binPath)) // the bin/infscale the serve tests built
	}
	os.Exit(code)
}
