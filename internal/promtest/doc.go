// Package promtest (a test harness) starts a real Prometheus server for tests: the binary
// pinned in the tools module (tools/go.mod, the same
// github.com/prometheus/prometheus version the main module imports), on a
// free loopback port, with a temporary data directory, stopped when the test
// ends. It also backfills history with promtool
// (`tsdb create-blocks-from openmetrics`).
//
// Binaries come from $INFSCALE_PROMETHEUS and $INFSCALE_PROMTOOL (the
// Makefile's `tools` target builds them into tools/bin and sets both), else
// from tools/bin, else they are built once into the user cache directory
// (`go build -C tools`; minutes the first time, seconds from the build cache).
// When none of that works the test is skipped, except under CI=true where it
// fails: CI must run the real-server tests.
//
// Facts that shape tests against it: the first scrape lands a few seconds
// after start (about 1 s here: Start passes the hidden flag
// --scrape.discovery-reload-interval=1s; Start waits for /-/ready, WaitFor
// for data); in Prometheus 3 a
// range window excludes its start point, so rate() needs windows of at least
// four scrape intervals; backfilled OpenMetrics needs `# EOF` and timestamps
// in seconds.
package promtest
