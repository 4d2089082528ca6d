package main

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/alecthomas/kong"

	"github.com/infscale/infscale/internal/quantity"
)

// The readers of flag values by type: every duration, whole number and
// decimal flag of every command is read by one of them (registered in
// newParser), so a bad value gets one kind of message: what was given,
// why it is not read, and the accepted forms with an example. Kong
// prefixes the flag ("--slo-ttft: ..."); run names it as typed.
var flagMappers = []kong.Option{
	kong.TypeMapper(reflect.TypeFor[time.Duration](), kong.MapperFunc(decodeDuration)),
	kong.TypeMapper(reflect.TypeFor[int](), kong.MapperFunc(decodeInt)),
	kong.TypeMapper(reflect.TypeFor[int32](), kong.MapperFunc(decodeInt)),
	kong.TypeMapper(reflect.TypeFor[int64](), kong.MapperFunc(decodeInt)),
	kong.TypeMapper(reflect.TypeFor[uint64](), kong.MapperFunc(decodeUint)),
	kong.TypeMapper(reflect.TypeFor[float64](), kong.MapperFunc(decodeFloat)),
	kong.NamedMapper("path", kong.MapperFunc(decodePath)),
}

// kongPath is kong's own reader of type:"path" flags (the path made
// absolute, "-" kept).
var kongPath = kong.NewRegistry().RegisterDefaults().ForNamedValue("path", reflect.ValueOf(""))

// decodePath reads a type:"path" flag as kong does, but refuses an empty
// value, which kong made the working directory: `--state-dir "$DIR"` with
// DIR unset wrote the state files into the directory serve was started
// in, and `--audit-log ""` said "--audit-log /home/me: is a directory".
func decodePath(ctx *kong.DecodeContext, target reflect.Value) error {
	if t := ctx.Scan.Peek(); target.Kind() == reflect.String && t.IsValue() && t.String() == "" {
		return errors.New("an empty path (an unset variable?): give a path, or leave the flag out")
	}
	return kongPath.Decode(ctx, target)
}

// flagText is the value of the flag being decoded, as typed.
func flagText(ctx *kong.DecodeContext, what string) (string, error) {
	t, err := ctx.Scan.PopValue(what)
	if err != nil {
		return "", err
	}
	if s, ok := t.Value.(string); ok {
		return s, nil
	}
	return fmt.Sprint(t.Value), nil
}

// durationForms is what a duration flag accepts.
const durationForms = "a number with a unit (ns, us, ms, s, m, h), e.g. 2s, 500ms, 1m30s"

// decodeDuration reads Go's duration syntax (time.ParseDuration). A bare
// number is refused with the unit it most likely lacks, a day with its
// hours: a unit is never guessed.
func decodeDuration(ctx *kong.DecodeContext, target reflect.Value) error {
	s, err := flagText(ctx, "duration")
	if err != nil {
		return err
	}
	d, err := parseFlagDuration(s)
	if err != nil {
		return err
	}
	target.SetInt(int64(d))
	return nil
}

// parseFlagDuration is decodeDuration's reading of s.
func parseFlagDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	d, err := time.ParseDuration(t)
	if err == nil {
		return d, nil
	}
	// The unit is suggested only where the number with it reads: NaN, Inf
	// and 1e3 parse as floats but "NaNs", "Infs" and "1e3s" are no
	// durations either.
	if _, ferr := strconv.ParseFloat(t, 64); ferr == nil && durationSyntaxRE.MatchString(t+"s") {
		return 0, fmt.Errorf("%q has no unit: write %ss for seconds or %sms for milliseconds (a duration is %s)", s, t, t, durationForms)
	}
	if days, ok := strings.CutSuffix(t, "d"); ok {
		if n, ferr := strconv.ParseFloat(days, 64); ferr == nil && n >= 0 {
			return 0, fmt.Errorf("%q: days are not a unit here: write %gh (a duration is %s)", s, n*24, durationForms)
		}
	}
	if durationSyntaxRE.MatchString(t) { // well formed, so too long for time.Duration
		return 0, fmt.Errorf("%q is out of range: at most %dh", s, math.MaxInt64/int64(time.Hour))
	}
	return 0, fmt.Errorf("%q is not a duration: want %s", s, durationForms)
}

// durationSyntaxRE matches Go's duration syntax: numbers each with a unit.
var durationSyntaxRE = regexp.MustCompile(`^[+-]?([0-9]*\.?[0-9]+(ns|us|µs|ms|s|m|h))+$`)

// decodeInt reads a whole number in decimal digits (kong's own reader
// takes 0x10 and 017, which the configuration file refuses) within the
// target's range.
func decodeInt(ctx *kong.DecodeContext, target reflect.Value) error {
	s, err := flagText(ctx, "int")
	if err != nil {
		return err
	}
	bits := target.Type().Bits()
	n, err := strconv.ParseInt(strings.TrimSpace(s), 10, bits)
	if errors.Is(err, strconv.ErrRange) {
		return fmt.Errorf("%q is out of range: want %d to %d", s, int64(-1)<<(bits-1), int64(1)<<(bits-1)-1)
	}
	if err != nil {
		return fmt.Errorf("%q is not a whole number: want an integer in decimal digits, e.g. 4", s)
	}
	target.SetInt(n)
	return nil
}

// decodeUint is decodeInt for unsigned targets (seeds).
func decodeUint(ctx *kong.DecodeContext, target reflect.Value) error {
	s, err := flagText(ctx, "uint")
	if err != nil {
		return err
	}
	n, err := strconv.ParseUint(strings.TrimSpace(s), 10, target.Type().Bits())
	if errors.Is(err, strconv.ErrRange) {
		return fmt.Errorf("%q is out of range: want 0 to %d", s, uint64(1)<<target.Type().Bits()-1)
	}
	if err != nil {
		return fmt.Errorf("%q is not a whole number >= 0: want an integer in decimal digits, e.g. 1", s)
	}
	target.SetUint(n)
	return nil
}

// decodeFloat reads a decimal number (strconv.ParseFloat's syntax; each
// command checks its range, NaN and infinities).
func decodeFloat(ctx *kong.DecodeContext, target reflect.Value) error {
	s, err := flagText(ctx, "float")
	if err != nil {
		return err
	}
	v, err := quantity.Decimal(strings.TrimSpace(s))
	if errors.Is(err, strconv.ErrRange) {
		return fmt.Errorf("%q is out of range: want a number of at most %g", s, math.MaxFloat64)
	}
	if err != nil {
		return fmt.Errorf("%q is not a number: want a decimal number without a unit, e.g. 0.5 or 12", s)
	}
	target.SetFloat(v)
	return nil
}

// seconds is a flag value of a time in seconds: a decimal number of
// seconds (2.5) or a duration with its unit (2500ms, 2.5s, 1m), as a ttft
// or queuewait --target reads it. The command checks its range (NaN, a
// negative time).
type seconds float64

// Decode reads a seconds flag (kong.MapperValue).
func (s *seconds) Decode(ctx *kong.DecodeContext) error {
	text, err := flagText(ctx, "seconds")
	if err != nil {
		return err
	}
	t := strings.TrimSpace(text)
	v, err := quantity.Decimal(t)
	if errors.Is(err, strconv.ErrRange) {
		return fmt.Errorf("%q is out of range: want a number of at most %g", text, math.MaxFloat64)
	}
	if err != nil {
		d, dur, perr := quantity.Parse(t)
		if perr != nil || !dur {
			return fmt.Errorf("%q is not a time: want seconds as a number or a duration with its unit, e.g. 2.5 or 2500ms", text)
		}
		v = d
	}
	*s = seconds(v)
	return nil
}

// percent is a flag value in percent: "0.1" and "0.1%" are both 0.1
// percent (one in a thousand); the sign is optional because the flag's
// unit is percent either way.
type percent float64

// Decode reads a percent flag (kong.MapperValue).
func (p *percent) Decode(ctx *kong.DecodeContext) error {
	s, err := flagText(ctx, "percent")
	if err != nil {
		return err
	}
	t := strings.TrimSpace(s)
	num := strings.TrimSpace(strings.TrimSuffix(t, "%"))
	v, err := quantity.Decimal(num)
	if err != nil || strings.Count(t, "%") > 1 { // each command checks its range
		return fmt.Errorf("%q is not a percentage: want a number of percent, with or without %%, e.g. 0.1 or 0.1%% (one in a thousand)", s)
	}
	*p = percent(v)
	return nil
}

// spellings are the flags of one command line typed with an alias (an old
// spelling kong accepts and help does not list): flag name -> the alias
// as typed, without "--".
type spellings map[string]string

// flagsOf maps every long flag name and alias of app's grammar to its
// flag, alias first-class: args are scanned for both.
func flagsOf(app *kong.Application) map[string]*kong.Flag {
	out := map[string]*kong.Flag{}
	_ = kong.Visit(app, func(n kong.Visitable, next kong.Next) error {
		if f, ok := n.(*kong.Flag); ok {
			out[f.Name] = f
			for _, a := range f.Aliases {
				out[a] = f
			}
		}
		return next(nil)
	})
	return out
}

// readSpellings scans args (up to "--") for the flags of app typed with
// an alias. A flag typed under two spellings (its name and an alias) is
// refused, invalid input naming both: which value wins would be the order
// of the words.
func readSpellings(app *kong.Application, args []string) (spellings, error) {
	flags := flagsOf(app)
	typed := map[string]string{} // flag name -> first spelling seen
	sp := spellings{}
	for _, a := range args {
		if a == "--" {
			break
		}
		name, ok := strings.CutPrefix(a, "--")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, "=")
		f := flags[name]
		if f == nil {
			continue
		}
		if first, ok := typed[f.Name]; ok && first != name {
			old, other := first, name // the old spelling first
			if old == f.Name {
				old, other = other, old
			}
			return nil, invalidf("--%s and --%s are one flag (--%s is its old spelling): give it once, as --%s", old, other, old, f.Name)
		}
		typed[f.Name] = name
		if name != f.Name {
			sp[f.Name] = name
		}
	}
	return sp, nil
}

// asTyped rewrites msg, which names flags by their names, to name each
// flag of sp as the user typed it: "--gpu: unknown GPU" is "--replica-gpu:
// unknown GPU" on a command line that said --replica-gpu.
func (sp spellings) asTyped(msg string) string {
	for name, alias := range sp {
		re := regexp.MustCompile(`--` + regexp.QuoteMeta(name) + `([^A-Za-z0-9-]|$)`)
		msg = re.ReplaceAllString(msg, "--"+alias+"$1")
	}
	return msg
}

// wholePercent is a flag value in whole percent, as the HPA's Percent
// policy takes it: "50" and "50%" are both 50.
type wholePercent int32

// Decode reads a whole-percent flag (kong.MapperValue).
func (p *wholePercent) Decode(ctx *kong.DecodeContext) error {
	s, err := flagText(ctx, "percent")
	if err != nil {
		return err
	}
	t := strings.TrimSpace(s)
	n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(t, "%")), 10, 32)
	if err != nil || strings.Count(t, "%") > 1 {
		return fmt.Errorf("%q is not a whole percentage: want an integer of percent, with or without %%, e.g. 50 or 50%%", s)
	}
	*p = wholePercent(n)
	return nil
}

// emptyFlag is the first flag of kctx's command line given an empty value
// that takes one string (--gpu "" from an unset shell variable), or nil:
// the command would run as if it were not given, on its default.
func emptyFlag(kctx *kong.Context) *kong.Flag {
	for _, p := range kctx.Path {
		f := p.Flag
		if f == nil || f.IsSlice() || f.IsMap() || f.IsBool() {
			continue
		}
		v := f.Target
		for v.Kind() == reflect.Pointer && !v.IsNil() {
			v = v.Elem()
		}
		if v.Kind() == reflect.String && v.String() == "" {
			return f
		}
	}
	return nil
}

// fraction is a flag value that is a fraction of one: "0.75" and "75%"
// are both 0.75, as the policy strings read kv:0.75 and kv:75%.
type fraction float64

// Decode reads a fraction flag (kong.MapperValue).
func (f *fraction) Decode(ctx *kong.DecodeContext) error {
	s, err := flagText(ctx, "fraction")
	if err != nil {
		return err
	}
	num, pct := strings.CutSuffix(strings.TrimSpace(s), "%")
	if pct {
		num = strings.TrimSpace(num) + "%" // "75 %" as "75%"
	}
	v, err := quantity.Fraction(num)
	if err != nil {
		return fmt.Errorf("%q is not a fraction: want a number such as 0.75, or a percentage such as 75%%", s)
	}
	*f = fraction(v)
	return nil
}

// dashFlag is the first flag of kctx's command line that names a file or
// directory (type:"path", or a FILE, DIR or PATH placeholder; a URL path
// has URLPATH) and is given "-": read as stdout or stdin by an operator, it
// was taken as a file named "-" in the working directory. No such flag reads or writes a stream (a
// page argument's "-" is stdin: arguments are not flags).
func dashFlag(kctx *kong.Context) *kong.Flag {
	for _, p := range kctx.Path {
		f := p.Flag
		if f == nil || f.IsSlice() || f.IsMap() || f.IsBool() {
			continue
		}
		if f.Tag.Type != "path" && f.PlaceHolder != "FILE" && f.PlaceHolder != "DIR" && f.PlaceHolder != "PATH" {
			continue
		}
		v := f.Target
		for v.Kind() == reflect.Pointer && !v.IsNil() {
			v = v.Elem()
		}
		if v.Kind() == reflect.String && v.String() == "-" {
			return f
		}
	}
	return nil
}
