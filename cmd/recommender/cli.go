package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/alecthomas/kong"
	"github.com/prometheus/common/model"

	"github.com/infscale/infscale/internal/atomicfile"
	"github.com/infscale/infscale/internal/boundedfile"
	"github.com/infscale/infscale/internal/httpurl"
	"github.com/infscale/infscale/pkg/activator"
	"github.com/infscale/infscale/pkg/config"
	"github.com/infscale/infscale/pkg/kube"
	"github.com/infscale/infscale/pkg/modelserver"
	"github.com/infscale/infscale/pkg/recommend"
)

// Exit codes of the infscale binary.
const (
	exitOK      = 0 // a result was produced
	exitRuntime = 1 // a runtime failure: unreachable URL, I/O error
	exitInvalid = 2 // invalid input: bad flag, file, page or config
	// exitInterrupted is 128 + SIGINT, the shell's convention for a command
	// a signal ended: any command whose context a SIGINT or SIGTERM
	// cancelled before it finished (serve's graceful stop is a success, 0).
	exitInterrupted = 130
)

// CLI is the kong grammar of the infscale binary: one field per subcommand.
type CLI struct {
	Version kong.VersionFlag `name:"version" help:"Print the version (module version, VCS revision, Go version) and exit."`

	Parse     ParseCmd     `cmd:"" help:"Read model-server /metrics pages (files, URLs or -) and print each replica's signals."`
	Decide    DecideCmd    `cmd:"" help:"Make one scaling decision and explain it step by step."`
	GPU       GPUCmd       `cmd:"" name:"gpu" help:"Print what one replica can do, derived from the GPU and the model."`
	Simulate  SimulateCmd  `cmd:"" help:"Replay a request trace through simulated GPU replicas under several policies."`
	Serve     ServeCmd     `cmd:"" help:"Run the recommender service: decide every interval for each target and export infscale_desired_replicas (--demo for the quickstart)."`
	Kube      KubeCmd      `cmd:"" help:"Make one decision on a live workload: replicas from its scale subresource, signals scraped from its Ready pods; --apply writes it."`
	Backtest  BacktestCmd  `cmd:"" help:"Replay a target's Prometheus history (last 7 days by default) under several policies, beside the replicas that actually ran."`
	Profile   ProfileCmd   `cmd:"" help:"Arrival rate by hour of day and day of week from Prometheus history, a proposed schedule floor (config schedule: and KEDA cron), and reactive vs schedule vs both replayed."`
	Tune      TuneCmd      `cmd:"" help:"Search policies on a trace or Prometheus history for the cheapest within a miss budget that holds out of sample and under stress; print the winner as a serve target."`
	Fleet     FleetCmd     `cmd:"" help:"Run a simulated vLLM fleet on loopback (vLLM-named /metrics per replica), optionally following infscale_desired_replicas."`
	SynthWeek SynthWeekCmd `cmd:"" name:"synth-week" help:"Write a synthetic week of a vLLM Deployment's metrics into a Prometheus TSDB directory (promtool backfill), to try backtest and profile in minutes."`
	History   HistoryCmd   `cmd:"" hidden:"" help:"Deprecated: synth-week's old name."`
	Accuracy  AccuracyCmd  `cmd:"" help:"Replay measured load stages (a ground-truth CSV) through the replica model and report TTFT/ITL/e2e errors per stage and MAPE, beside other simulators' on the same rows."`
	Load      LoadCmd      `cmd:"" help:"Load an OpenAI-compatible endpoint (closed or open loop, or a sweep), measure TTFT/ITL/e2e and find the knee."`
	Activator ActivatorCmd `cmd:"" help:"Reverse proxy that holds requests while the upstream has no ready endpoint (scale to zero), exports the held count, releases them in order."`
}

// env is what every subcommand's Run receives: the streams and the context.
type env struct {
	ctx    context.Context
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	// args is the command line after the program's name, as given.
	args []string
	// given holds the names (without --) of the flags the command line
	// set, to tell a flag given at its default from one not given.
	given map[string]bool
}

// givenFlags returns the names of the flags kctx's command line set.
func givenFlags(kctx *kong.Context) map[string]bool {
	given := map[string]bool{}
	for _, p := range kctx.Path {
		if p.Flag != nil {
			given[p.Flag.Name] = true
		}
	}
	return given
}

// warnDeprecated prints one line on stderr for each flag typed with one
// of its kong aliases (sp): every flag alias is an old spelling kept for
// one release (the replica flags' --replica-* of decide, kube, fleet and
// load), and help lists only the documented name. Only for the flags of
// the command kctx chose (nil: none): another command's alias is an
// unknown flag here, and "use --gpu" would name a flag serve does not have.
func warnDeprecated(sp spellings, kctx *kong.Context, stderr io.Writer) {
	if kctx == nil {
		return
	}
	names := slices.Sorted(maps.Keys(sp))
	for _, n := range names {
		if !slices.ContainsFunc(kctx.Flags(), func(f *kong.Flag) bool { return f.Name == n }) {
			continue
		}
		fmt.Fprintf(stderr, "infscale: --%s is deprecated and goes in the next release; use --%s\n", sp[n], n)
	}
}

// warnConfig prints one line on stderr for each configuration key written
// under its old name (config.File.Deprecations: file:line:col, the key,
// and the name to write instead) or warned of (config.File.Warnings).
func warnConfig(stderr io.Writer, deprecations []config.Error) {
	for _, d := range deprecations {
		fmt.Fprintf(stderr, "infscale: warning: %v\n", d)
	}
}

// commandLine is "infscale" and args as a POSIX shell reads them back: an
// argument with a character outside [A-Za-z0-9@%+=:,./_-] (or empty) is
// single-quoted, a quote in it written '\” (as Python's shlex.quote).
func commandLine(args []string) string {
	var b strings.Builder
	b.WriteString("infscale")
	for _, a := range args {
		b.WriteByte(' ')
		safe := a != "" && !strings.ContainsFunc(a, func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("@%+=:,./_-", r))
		})
		if safe {
			b.WriteString(a)
			continue
		}
		b.WriteString("'" + strings.ReplaceAll(a, "'", `'\''`) + "'")
	}
	return b.String()
}

// invalidInputError marks an error as the user's input being wrong (exit 2).
type invalidInputError struct{ err error }

func (e invalidInputError) Error() string { return e.err.Error() }
func (e invalidInputError) Unwrap() error { return e.err }

// invalid wraps err so that run exits 2.
func invalid(err error) error {
	if err == nil {
		return nil
	}
	return invalidInputError{err}
}

// invalidf formats an invalid-input error (exit 2).
func invalidf(format string, args ...any) error { return invalid(fmt.Errorf(format, args...)) }

// newParser builds the kong parser over cli writing to stdout/stderr; exit
// records kong's own exit requests (--help) instead of terminating.
func newParser(cli *CLI, stdout, stderr io.Writer, exit func(int)) (*kong.Kong, error) {
	opts := append([]kong.Option{
		kong.Name("infscale"),
		kong.Description("Autoscaling recommendations for LLM inference servers, from the signals that measure their load."),
		kong.Writers(stdout, stderr),
		kong.Exit(exit),
		kong.UsageOnError(),
		kong.ConfigureHelp(kong.HelpOptions{Compact: true}),
		// From pkg/recommend, so that help and defaults follow the core.
		kong.Vars{"version": versionLine(buildInfo()), "signals": recommend.SignalNames(), "default_max": strconv.Itoa(recommend.DefaultMax), "max_fleet_rate": strconv.Itoa(maxFleetRate), "idle_timeout": model.Duration(activator.DefaultIdleTimeout).String(), "upstream_idle_timeout": model.Duration(activator.DefaultUpstreamIdleTimeout).String(), "default_stress": defaultStressSpec, "servers": strings.Join(modelserver.Names(), ", ")},
	}, flagMappers...)
	return kong.New(cli, opts...)
}

// buildInfo is the binary's build information, nil when it has none.
func buildInfo() *debug.BuildInfo {
	bi, _ := debug.ReadBuildInfo()
	return bi
}

// finalLine returns how run writes the error a command ends with: the
// plain "infscale: MSG" line, or, for serve and the activator with
// --log-format json, one slog JSON record on stderr (level ERROR, msg
// "exiting", error MSG, exit_code CODE), as every line before it was.
// kctx is the parse's context (the parsed one, or a parse error's), nil
// when nothing was parsed; it names the command. The format is read from
// args, not from kctx: kong stops at the first bad flag, and
// `serve --no-such-flag --log-format json` ends in JSON too.
func finalLine(kctx *kong.Context, args []string, stderr io.Writer) func(msg string, code int) {
	json := false
	if kctx != nil && kctx.Selected() != nil {
		switch strings.Fields(kctx.Command())[0] {
		case "serve", "activator": // the commands with LogFlags
			json = logFormatArg(args) == "json"
		}
	}
	if !json {
		return func(msg string, _ int) { fmt.Fprintf(stderr, "infscale: %s\n", msg) }
	}
	return func(msg string, code int) {
		slog.New(slog.NewJSONHandler(stderr, nil)).Error("exiting", "error", msg, "exit_code", code)
	}
}

// logFormatArg is the value of the last --log-format in args before a
// "--" ("--log-format V" or "--log-format=V"), "" when none is given.
func logFormatArg(args []string) string {
	v := ""
	for i, a := range args {
		if a == "--" {
			break
		}
		if a == "--log-format" && i+1 < len(args) {
			v = args[i+1]
		} else if s, ok := strings.CutPrefix(a, "--log-format="); ok {
			v = s
		}
	}
	return v
}

// run parses args, runs the chosen subcommand and returns the process exit code.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var cli CLI
	exited, code := false, 0
	// A command's result that could not be written (stdout on a full disk,
	// /dev/full) is a failure, whether or not the command checked its writes.
	out := &checkedWriter{w: stdout}
	stdout = out
	parser, err := newParser(&cli, stdout, stderr, func(c int) { exited, code = true, c; panic(kongExit{}) })
	if err != nil {
		fmt.Fprintf(stderr, "infscale: %v\n", err)
		return exitRuntime
	}
	// Messages name a flag as it was typed (an old spelling too), and a
	// flag typed under two spellings is refused.
	sp, spErr := readSpellings(parser.Model, args)
	kctx, err := parseArgs(parser, args)
	if exited {
		if code == exitOK && out.failed() != nil {
			fmt.Fprintf(stderr, "infscale: %v\n", out.failed())
			return exitRuntime
		}
		return code
	}
	var pe *kong.ParseError
	if errors.As(err, &pe) && pe.Context != nil && pe.Context.Selected() == nil && out.failed() == nil {
		// No command chosen (none given, or a word that is none): the
		// whole usage, every command with its one-line help. Not when
		// --help's own text could not be written: that error alone.
		parser.Stdout = stderr
		_ = pe.Context.PrintUsage(false)
		parser.Stdout = stdout
		fmt.Fprintln(stderr)
		if strings.HasPrefix(err.Error(), "expected one of") { // kong's, listing five commands and "..."
			err = errors.New("no command given: choose one of the commands above (infscale COMMAND --help shows its flags)")
		}
	}
	if err != nil {
		err = goodputArgHint(err, args)
		err = readyFlagHint(err)
		err = listArgHint(err)
		err = replicaFlagHint(err)
	}
	if spErr != nil {
		err = spErr // before a value's own error: the flag is given twice
	}
	if err == nil {
		// A one-value flag given twice under one spelling keeps the last,
		// as Go's flag package and kubectl do: wrappers append overrides.
		if f := emptyFlag(kctx); f != nil {
			err = invalidf("--%s is given an empty value: give one, or leave the flag out for its default (an unset shell variable?)", f.Name)
		} else if f := dashFlag(kctx); f != nil {
			hint := ""
			if f.Name == "audit-log" {
				hint = "; /dev/stdout appends the lines to stdout"
			}
			err = invalidf("--%s -: want a file name; \"-\" is not stdout or stdin here (a file named - is ./-)%s", f.Name, hint)
		}
	}
	fctx := kctx // what was parsed, of a parse error too
	if fctx == nil && pe != nil {
		fctx = pe.Context
	}
	warnDeprecated(sp, fctx, stderr)
	// serve and the activator with --log-format json end in one JSON
	// record too: a log shipper reading stderr parses every line.
	final := finalLine(fctx, args, stderr)
	if err != nil {
		code := exitInvalid
		if out.failed() != nil { // --help's text, not the input
			code = exitRuntime
		}
		final(sp.asTyped(err.Error()), code)
		return code
	}
	err = kctx.Run(&env{ctx: ctx, stdin: stdin, stdout: stdout, stderr: stderr, args: args, given: givenFlags(kctx)})
	if err == nil {
		if werr := out.failed(); werr != nil {
			fmt.Fprintf(stderr, "infscale: %v\n", werr)
			return exitRuntime
		}
		return exitOK
	}
	if ctx.Err() != nil {
		// The signal, not the command, ended it: whatever failed after
		// (context canceled, a cut read) is its consequence.
		final("interrupted", exitInterrupted)
		return exitInterrupted
	}
	code = exitRuntime
	var inv invalidInputError
	var kc *kube.ConfigError // a missing or malformed kubeconfig is the user's input too
	if errors.As(err, &inv) || errors.As(err, &kc) {
		code = exitInvalid
	}
	final(sp.asTyped(err.Error()), code)
	return code
}

// checkedWriter passes writes to w and keeps the first error; safe for
// concurrent writers.
type checkedWriter struct {
	w   io.Writer
	mu  sync.Mutex
	err error
}

func (c *checkedWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if err != nil {
		c.mu.Lock()
		if c.err == nil {
			c.err = err
		}
		c.mu.Unlock()
	}
	return n, err
}

// failed is the first write error, nil when every write succeeded.
func (c *checkedWriter) failed() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err
}

// kongExit is the panic value used to unwind out of kong when it asks to exit
// (after printing --help), so that run can return the code instead.
type kongExit struct{}

func parseArgs(parser *kong.Kong, args []string) (kctx *kong.Context, err error) {
	defer func() {
		if r := recover(); r != nil {
			if _, ok := r.(kongExit); !ok {
				panic(r)
			}
		}
	}()
	return parser.Parse(args)
}

// sloTTFTAtMost refuses a --slo-ttft beyond recommend.MaxLatencyTarget (a
// week): the recommended policy's ttft target is the SLO, and a latency
// target that long never fires (a slip such as 100000h).
func sloTTFTAtMost(d time.Duration) error {
	if d <= recommend.MaxLatencyTarget {
		return nil
	}
	return invalidf("--slo-ttft %s: want at most %s (a week, the bound of a ttft target): a first token that late is a failure whatever the SLO, and the recommended policy's ttft target, the SLO, would never fire", shortDuration(d), shortDuration(recommend.MaxLatencyTarget))
}

// durationIn checks that flag's value d lies in lo..hi: an invalid-input
// error (exit 2) naming the flag, the range and why (a clause such as "a
// poll more often than 100ms busy-loops") otherwise.
func durationIn(flag string, d, lo, hi time.Duration, why string) error {
	if d >= lo && d <= hi {
		return nil
	}
	return invalidf("--%s %s: want %s to %s (%s)", flag, shortDuration(d), shortDuration(lo), shortDuration(hi), why)
}

// shortDuration writes d as a flag takes it, without the zero units Go's
// String adds: 1h, not 1h0m0s; 2m, not 2m0s.
func shortDuration(d time.Duration) string {
	t := d.String()
	if strings.HasSuffix(t, "m0s") {
		t = strings.TrimSuffix(t, "0s")
	}
	if strings.HasSuffix(t, "h0m") {
		t = strings.TrimSuffix(t, "0m")
	}
	return t
}

// fileError is err, from opening or reading the file path that flag
// names, as invalid input (exit 2) naming the flag and the path once:
// "--behavior b.yaml: no such file", not Go's "open b.yaml: no such file
// or directory". An error that already names the path (boundedfile's) is
// kept behind the flag.
func fileError(flag, path string, err error) error {
	var pe *fs.PathError
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return invalidf("--%s %s: no such file%s", flag, path, boundedfile.Where(path))
	case errors.As(err, &pe):
		return invalidf("--%s %s: %v", flag, path, pe.Err)
	}
	return invalidf("--%s: %w", flag, err)
}

// noDir says why dir, which is not a directory, cannot take a file: "F is
// a file, not a directory" when dir is a file or lies under one (F), "dir
// is a loop of symbolic links" when resolving it loops, else "directory
// dir does not exist".
func noDir(dir string) string {
	if _, err := os.Stat(dir); errors.Is(err, syscall.ELOOP) {
		return dir + " is a loop of symbolic links, not a directory"
	}
	if f := nonDir(dir); f != dir || isFile(f) {
		return f + " is a file, not a directory"
	}
	return "directory " + dir + " does not exist"
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && !fi.IsDir()
}

// outputDirWritable refuses dir, where the value path of an output flag
// is written, when no file can be created in it now (atomicfile.CheckDir):
// checked before the run, whose result would otherwise be lost at its end.
// A runtime condition, exit 1, as an unwritable serve --state-dir. A path
// (other than dir) that exists and is not a regular file, such as
// /dev/stdout or a named pipe, is invalid input (exit 2): the write would
// replace it.
func outputDirWritable(flag, path, dir string) error {
	if path != dir {
		if err := atomicfile.CheckTarget(path); err != nil {
			return invalidf("--%s %w", flag, err)
		}
		// A symlink is followed by the write: its file's directory
		// takes the temporary file, not the link's.
		if r, err := atomicfile.Resolve(path); err == nil && r != path {
			dir = filepath.Dir(r)
		}
	}
	if err := atomicfile.CheckDir(dir); err != nil {
		return fmt.Errorf("--%s %s: directory %w; choose a directory you can write to (checked before the run, whose result would be lost at its end)", flag, path, err)
	}
	return nil
}

// existingFile refuses path, the value of flag, when it is not a file that
// exists (fileError's message; a directory is named as one).
func existingFile(flag, path string) error {
	st, err := os.Stat(path)
	if err != nil {
		return fileError(flag, path, err)
	}
	if st.IsDir() {
		return invalidf("--%s %s: is a directory; want a file", flag, path)
	}
	return nil
}

// httpURL checks that s, the value of name (a flag, "--follow", or an
// argument, "URL"), is an absolute http or https URL with a host: an
// invalid-input error (exit 2) naming it otherwise (the URL as given, or
// redacted when it holds a password).
func httpURL(name, s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err == nil {
		if err = httpurl.Check(u); err == nil {
			return u, nil
		}
	}
	shown := strconv.Quote(s)
	if r := redactURL(s); r != s {
		shown = r
	}
	if errors.Is(err, httpurl.ErrPort) {
		return nil, invalidf("%s %s: %v", name, shown, err)
	}
	return nil, invalidf("%s %s: want http://HOST[:PORT][/PATH] or https://...", name, shown)
}

// redactArgs is args with the value of --flag, when it is secret,
// replaced by shown (given as "--flag VALUE" or "--flag=VALUE").
func redactArgs(args []string, flag, secret, shown string) []string {
	out := slices.Clone(args)
	for i, a := range out {
		switch {
		case a == "--"+flag+"="+secret:
			out[i] = "--" + flag + "=" + shown
		case a == secret && i > 0 && out[i-1] == "--"+flag:
			out[i] = shown
		}
	}
	return out
}

// redactURL is s, a URL as typed, for a message or an output that must
// hold no password: url.URL.Redacted when s holds user information, and
// "(unparsable)" when s does not parse and has an "@".
func redactURL(s string) string {
	u, err := url.Parse(s)
	switch {
	case err == nil && u.User != nil:
		return u.Redacted()
	case err != nil && strings.Contains(s, "@"):
		return "(unparsable)"
	}
	return s
}

// needsFlag refuses flag (its name without --) given on the command line
// while enabled is false: it would be ignored. The error (exit 2) names
// the flag and what it needs (need, e.g. "--follow").
func needsFlag(given map[string]bool, flag string, enabled bool, need string) error {
	if enabled || !given[flag] {
		return nil
	}
	return invalidf("--%s needs %s (without it the flag would be ignored)", flag, need)
}

// replicaFlagHint replaces kong's answer to --replica on a command with
// the replica flags (a list of its 27 --replica-* aliases) by the flags
// that choose the replica model's mode: --replica is accuracy's alone.
func replicaFlagHint(err error) error {
	if !strings.HasPrefix(err.Error(), "unknown flag --replica, did you mean") {
		return err
	}
	return errors.New("unknown flag --replica: here the replica model starts from the reference, or from --calibrated or --fitted (accuracy's --replica fitted|calibrated|reference), with --gpu, --model, --tp and --calibration FILE (COMMAND --help lists them)")
}

// listArgHint adds to kong's "unexpected argument X" that a list argument
// (decide's and parse's PAGE ...) goes in one run: kong ends the list at
// the first flag after it, so a page after a flag was refused naming
// nothing to do. Other errors, and commands without a list, as they are.
func listArgHint(err error) error {
	var pe *kong.ParseError
	if !errors.As(err, &pe) || pe.Context == nil || pe.Context.Selected() == nil || !strings.HasPrefix(err.Error(), "unexpected argument ") {
		return err
	}
	for _, p := range pe.Context.Selected().Positional {
		if p.IsSlice() {
			return fmt.Errorf("%w: the %s arguments go in one run, all before the flags or all after them (a flag between two of them ends the list)", err, p.Name)
		}
	}
	return err
}
