// Package config loads the `infscale serve` configuration file: YAML decoded
// strictly with goccy/go-yaml, where every problem (unknown key, wrong type,
// bad value) is reported at once with file:line:col, the key path and what is
// allowed, as Prometheus's rulefmt does. Nothing of an invalid file is used.
//
// Reading guide: config.go (the shape, one struct per YAML block), load.go
// (Load/Parse and the defaults), strict.go (the key-by-key decoder that
// collects every problem), validate.go (value checks, HPA behavior validation,
// PromQL validation with promql/parser), policy.go (a target as a
// recommend.Policy), hpabehavior.go (DecodeBehavior: a bare autoscalingv2
// behavior file, for `infscale decide --behavior`, read by the same decoder
// and validator as a configuration's behavior:; pkg/recommend takes the
// decoded value). docs/config.md documents every key, default and unit.
package config
