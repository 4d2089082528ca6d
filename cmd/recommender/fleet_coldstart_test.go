package main

import "testing"

// TestFleetColdStartBound: fleet --cold-start 100000h was accepted: the
// fleet runs in wall time, so its replicas never served and the run read
// as an outage. At most a day (24h), each part of the replica model's
// cold start's bound; a day is admitted by the check (it is not run here).
func TestFleetColdStartBound(t *testing.T) {
	wantRefused(t, []string{"fleet", "--cold-start", "25h"}, nil, "--cold-start 25h: want at most 24h (a day, the bound of each part of the replica model's cold start")
}
