// Package histogram is the one reading of Prometheus counters and classic
// histograms that infscale needs outside Prometheus: a counter's increase
// between two samples with Prometheus's reset rule (counter.go), a
// histogram's increase bucket by bucket and the sum of histograms of two
// layouts (increase.go), its quantile
// (Prometheus's own promql.BucketQuantile, what histogram_quantile does on
// classic buckets) and its tail share by the same linear interpolation
// inside a bucket (quantile.go).
//
// Embedded serve, parse and decide (pkg/scrape, pkg/serve) and backtest
// (pkg/backtest) all read TTFT and token histograms through it, so a
// quantile or a restart means the same thing in every mode.
package histogram
