// Package histogram is the one reading of Prometheus counters and classic
// histograms that infscale needs outside Prometheus: a counter's increase
// between two samples with Prometheus's reset rule (counter.go), a
// histogram's increase bucket by bucket (increase.go), and its quantile
// and tail share by linear interpolation inside a bucket, as PromQL's
// histogram_quantile reads classic buckets (quantile.go).
//
// Embedded serve, parse and decide (pkg/scrape, pkg/serve) and backtest
// (pkg/backtest) all read TTFT and token histograms through it, so a
// quantile or a restart means the same thing in every mode.
package histogram
