package main

import "testing"

// TestUnboundedFlagsRefused: durations past anything a user means were
// accepted: --slo-ttft 720h (the recommended policy's ttft target, the
// SLO, would never fire), fleet --cold-start 100000h (replicas that never
// serve, in wall time: TestFleetColdStartBound), a policy string's ttft:100000h and a schedule
// window of 100000h. Each is refused naming the flag and its bound: a
// week for a TTFT SLO or target (168h, 604,800 s), a day for a cold start
// (each part of the replica model's is at most a day), a year for a
// window (8760h).
func TestUnboundedFlagsRefused(t *testing.T) {
	for _, cmd := range []string{"simulate", "tune"} {
		args := []string{cmd, "--slo-ttft", "169h", "-q"}
		if cmd == "tune" {
			args = append(args, "--trace", "reference")
		}
		wantRefused(t, args, nil, "--slo-ttft 169h: want at most 168h (a week, the bound of a ttft target)")
	}
	wantRefused(t, []string{"simulate", "-q", "-p", "queue:24,ttft:100000h"}, nil,
		`policy "queue:24,ttft:100000h": at column 15: ttft target: 3.6e+08 s must be at most 604800 s (a week)`)
	wantRefused(t, []string{"simulate", "-q", "-p", "queue:24,schedule=0 8 * * *;100000h;2"}, nil,
		"at column 29: schedule duration: 100000h0m0s must be at most 8760h0m0s (a year")
	wantRefused(t, []string{"decide", "--queue", "4", "--metric", "queue,ttft", "--target", "4,200h"}, nil,
		"--target (for --metric ttft): 720000 s must be at most 604800 s (a week)")
}
