// Package replay is infscale's discrete-event simulator: it replays a
// request trace through simulated GPU replicas (pkg/replica) while a policy
// observes the fleet every period and decides the replica count, with the
// same pkg/recommend code that decides in production, on a simulated clock.
//
// Semantics (docs/design.md's reference lesson): an arrival goes to the ready
// replica with the fewest outstanding requests; a replica queues, admits
// while it has batch slots and KV space, prefills (compute-bound; chunked
// prefill optional) and decodes (memory-bound steps whose time grows with
// the batch's context); new replicas serve after the cold start; removal
// takes starting replicas first, then the least loaded ready ones, which
// drain; replica time counts starting and draining replicas; with no ready
// replica, requests wait in an activator (held). A request misses the SLO
// when its TTFT exceeds the SLO, when it is rejected (it can never fit the KV
// cache), or when it never got a first token.
//
// Speed: nothing happens per token. Between events a replica's batch is
// advanced analytically: with a fixed batch, decode step i takes
// max(a + d·i, f) seconds, so the time of n steps and the steps done by a
// time are closed forms (model.go), and the next event of a replica is its
// next completion, the end of a prefill, or the step boundary after an
// arrival it can admit. Requests are 16-24 bytes and streamed from the trace.
//
// Determinism: events are ordered by (time, kind, replica id); every random
// draw comes from a seeded source passed in; each policy runs alone on its
// own pass over the trace, so results do not depend on parallelism.
//
// Reading guide: run.go (Run, RunAll, Config, Result), then sim.go (the
// event loop, with routing, scaling and the activator), replica.go (one
// replica's state machine), queue.go (the FIFO of pending requests), observe.go
// (what a policy sees), hist.go (TTFT quantiles), policy.go (the policy
// strings), then one file per policy kind (infscale.go, hpa.go, knative.go,
// oracle.go, follow.go) and pct.go, plot.go (output).
package replay
