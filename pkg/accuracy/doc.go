// Package accuracy holds the replica model and the replay against real
// measurements: it reads a ground-truth file of load stages (the schema of
// the public sim-to-real set's vllm-trainval.csv), replays each experiment's
// stages through pkg/replica and pkg/replay, and compares predicted and
// measured TTFT, ITL and end-to-end latency per stage, beside other
// simulators' predictions of the same rows (`infscale accuracy`).
//
// Reading guide: groundtruth.go and peers.go read the files; predict.go
// turns an experiment into a replica and a Poisson workload and replays it;
// report.go compares and prints.
package accuracy
