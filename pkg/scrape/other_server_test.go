package scrape

import (
	"errors"
	"strings"
	"testing"

	"github.com/infscale/infscale/pkg/modelserver"
)

// TestOtherServersPage: a page read with a server whose families are all
// absent, while another server's are there (an SGLang page under the
// config's default server: vllm), was read as a page of unknowns (serve
// logged "no page reports running requests", decide said no-data); it is
// refused as the other server's page, naming both and what to give. A
// page of neither (a replica still starting) is still read, and a page of
// the server given is read as before.
func TestOtherServersPage(t *testing.T) {
	const sglang = "# TYPE sglang:num_running_reqs gauge\nsglang:num_running_reqs 3\n# TYPE sglang:num_queue_reqs gauge\nsglang:num_queue_reqs 1\n"
	_, err := Read(strings.NewReader(sglang), "text/plain", "sglang.prom", modelserver.VLLM)
	if !errors.Is(err, ErrInvalidPage) {
		t.Fatalf("err = %v, want ErrInvalidPage", err)
	}
	want := "sglang.prom: invalid metrics page: the page is sglang's, not vllm's: none of vllm's families (vllm:num_requests_running, vllm:num_requests_waiting) is on it; give the server as sglang (server: in the config, --server on the command line), or auto to detect it"
	if err.Error() != want {
		t.Errorf("err = %q\nwant  %q", err, want)
	}
	p, err := Read(strings.NewReader(sglang), "text/plain", "sglang.prom", modelserver.SGLang)
	if err != nil || p.Running != 3 || p.Waiting != 1 {
		t.Errorf("as sglang: running %v waiting %v err %v, want 3, 1, nil", p.Running, p.Waiting, err)
	}
	// Only the process collector: nothing to tell a server by, not refused.
	const starting = "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total 1\n"
	if _, err := Read(strings.NewReader(starting), "text/plain", "starting.prom", modelserver.VLLM); err != nil {
		t.Errorf("a page of no server's families under vllm: err = %v, want it read (its signals unknown)", err)
	}
}

// TestHugeRequestCount: a running or waiting series above MaxRequests (a
// billion) is no load a server can hold: the page is refused at the
// sample's line, instead of a decision at the replica cap (running 1e300
// gave desired 2147483647 before max and the rate limit). A billion is
// still read.
func TestHugeRequestCount(t *testing.T) {
	page := func(running string) string {
		return "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running " + running + "\n# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting 2\n"
	}
	_, err := Read(strings.NewReader(page("1e300")), "text/plain", "r.prom", modelserver.VLLM)
	want := `r.prom:2: invalid metrics page: {__name__="vllm:num_requests_running"} is 1e+300, not a running-request count (allowed: 0 to 1e+09)`
	if err == nil || err.Error() != want {
		t.Errorf("running 1e300: err = %v\nwant %q", err, want)
	}
	p, err := Read(strings.NewReader(page("1e9")), "text/plain", "r.prom", modelserver.VLLM)
	if err != nil || p.Running != 1e9 {
		t.Errorf("running 1e9: running %v err %v, want 1e9 read", p.Running, err)
	}
}
