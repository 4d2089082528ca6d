// Package scrape reads model-server /metrics pages (Prometheus text format or
// OpenMetrics) into one replica's load signals, with Prometheus's own parser
// (github.com/prometheus/prometheus/model/textparse).
//
// Reading guide: page.go (Page, the result), read.go (Read: bytes to Page),
// signals.go (how a family becomes a signal), detect.go (server
// auto-detection), load.go (files, URLs, stdin; LoadAll for a fleet),
// rate.go (counters from two scrapes), ttft.go (TTFT histogram of an
// interval and its quantile), aggregate.go (pages of several replicas to
// totals), errors.go (sentinels: invalid page vs fetch failure).
//
// A Page keeps every sample of the page (Samples, SumBy) besides the
// reduced signals; pages are small (a busy vLLM page is ~1,000 samples) and
// short-lived.
//
// Rules (docs/design.md, "Signals and their semantics" and "Field cases"):
//   - running and waiting are summed over every series of the family (engine,
//     dp_rank, tp_rank labels); KV usage is the maximum over series;
//   - for each signal the profile's alternatives are tried in preference order
//     and the first one present wins; two alternatives are never added (vLLM
//     kv_cache_usage_perc over gpu_cache_usage_perc, docs/design.md case C08);
//   - family names match exactly: `x_created` is not `x`;
//   - a family that is absent, declared without samples, or whose samples are
//     all NaN/±Inf is ABSENT (NaN in Page), never 0; non-finite samples are
//     ignored next to finite ones;
//   - info-style gauges (vllm:cache_config_info, vllm:lora_requests_info) are
//     never load; lora_requests_info's current state is its max-value series;
//   - counters become rates only from two scrapes (Rate), resets handled;
//   - a stuck engine (waiting > 0, running == 0, KV == 0) is flagged in
//     Page.Suspect, its values kept as read (case C18 of docs/design.md).
package scrape
