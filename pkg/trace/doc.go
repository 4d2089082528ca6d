// Package trace reads request traces for the replay simulator: one Request
// (arrival time, prompt tokens, output tokens) at a time, in arrival order,
// streamed so that a week of traffic never has to sit in memory at once.
//
// Sources (see Parse for the spec strings):
//   - the built-in reference trace (reference.go): the shape of docs/design.md's
//     reference comparison, a non-homogeneous Poisson process with documented
//     rate pieces and token distributions;
//   - synthetic Poisson traffic (synthetic.go), a step and a daily cycle
//     (shapes.go), on-off bursts with heavy-tailed gaps (onoff.go);
//   - the Azure LLM inference trace 2023 CSV (azure.go);
//   - the BurstGPT trace CSV (burstgpt.go);
//   - Mooncake JSON lines (mooncake.go; each key once, exact, a key given
//     twice named with internal/jsonpos);
//   - a generic CSV arrival_s,prompt_tokens,output_tokens (csv.go).
//
// The CSV formats are parsed with encoding/csv (records.go: quoted fields,
// one row a line), fed a line at a time by lines.go, which every file format
// shares (line numbers, byte order mark, CRLF, MaxLine, the binary check,
// the note on an error at a last line without a line end: a file cut while
// being written).
//
// Transforms (transform.go) compress time (RateScale) and cut a window.
//
// Reading guide: request.go (the contract: Request, Reader, Source), then
// parse.go (spec strings), then one file per source. Errors name the file and
// line and say what was expected; nothing panics on bad input.
package trace
