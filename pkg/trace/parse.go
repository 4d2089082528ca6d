package trace

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"unicode/utf8"

	"github.com/infscale/infscale/internal/boundedfile"
)

// Options are the transforms applied after a trace is opened.
type Options struct {
	// Seed seeds generated traces (reference, synthetic without seed=).
	Seed uint64
	// Sort allows a file whose rows are out of arrival order (it is read
	// into memory and sorted); without it such a file is an error. With a
	// generated trace (reference, synthetic:) it is an error.
	Sort bool
	// RateScale compresses time by this factor (0 or 1: unchanged).
	RateScale float64
	// WindowStart and WindowEnd cut [start, end) seconds (end 0: to the end).
	WindowStart, WindowEnd float64
}

// Formats lists the trace specs ParseContext accepts, in one line, for the errors
// of a spec that is none of them (docs/simulate.md#traces has each kind's
// keys).
const Formats = "reference, synthetic:poisson|step|diurnal|onoff,KEY=VALUE,..., or a file " +
	"(Azure LLM or BurstGPT CSV, Mooncake .jsonl, CSV " + GenericHeader + "; azure:, burstgpt:, mooncake: or csv: before the path forces one); " +
	"docs/simulate.md#traces"

// ParseContext opens a trace spec:
//
//	reference                      the built-in reference trace (ReferenceShape)
//	synthetic:poisson,rate=...     steady Poisson traffic (ParseSynthetic)
//	synthetic:step,... / diurnal,... a burst or a daily cycle (StepShape, DiurnalShape)
//	synthetic:onoff,...            bursts and heavy-tailed silent gaps (OnOff)
//	azure:FILE, burstgpt:FILE, mooncake:FILE, csv:FILE
//	FILE                           format from the extension (.jsonl: Mooncake)
//	                               or the CSV header (Azure, BurstGPT or generic)
//
// then applies opts (sort, rate scale, window, in that order). It reads the
// start of a file to detect its format but leaves full validation to the
// passes (or Check).
// Its read of a whole file under opts.Sort ends with ctx's error once
// ctx is done (SortedContext).
func ParseContext(ctx context.Context, spec string, opts Options) (Source, error) {
	src, err := parseBase(spec, opts.Seed)
	if err != nil {
		return Source{}, err
	}
	if opts.Sort {
		if kind, _, _ := strings.Cut(spec, ":"); kind == "reference" || kind == "synthetic" {
			// Ignored, it would say nothing: a generated trace is in order.
			return Source{}, fmt.Errorf("trace %q is generated in time order: sort (--sort) applies to a trace file; leave it out", spec)
		}
		if src, err = SortedContext(ctx, src); err != nil {
			return Source{}, err
		}
	}
	if opts.RateScale < 0 {
		return Source{}, fmt.Errorf("rate scale %g: want a factor > 0", opts.RateScale)
	}
	if opts.RateScale > 0 {
		src = RateScale(src, opts.RateScale)
	}
	if opts.WindowStart > 0 || opts.WindowEnd > 0 {
		src = WindowContext(ctx, src, opts.WindowStart, opts.WindowEnd)
	}
	return src, nil
}

func parseBase(spec string, seed uint64) (Source, error) {
	kind, rest, _ := strings.Cut(spec, ":")
	switch kind {
	case "":
		return Source{}, fmt.Errorf("empty trace: want %s", Formats)
	case "reference":
		if rest != "" {
			return Source{}, fmt.Errorf("trace %q: the reference trace takes no options (use --seed)", spec)
		}
		return Reference(seed), nil
	case "synthetic":
		src, err := parseSyntheticKind(rest, seed)
		if err != nil {
			return Source{}, err
		}
		return src, generatedBound(spec, src.expected)
	case "azure", "burstgpt", "mooncake", "csv":
		if rest == "" {
			return Source{}, fmt.Errorf("trace %q: %s: takes the file's path after it, e.g. %s:trace.csv", spec, kind, kind)
		}
		return fileSource(rest, map[string]func(string) (Reader, error){"azure": OpenAzureCSV, "burstgpt": OpenBurstGPT, "mooncake": OpenMooncake, "csv": OpenGenericCSV}[kind])
	}
	return detect(spec)
}

// parseSyntheticKind parses the part of a synthetic spec after
// "synthetic:" by its process name.
func parseSyntheticKind(rest string, seed uint64) (Source, error) {
	if err := syntheticKeyOnce(rest); err != nil {
		return Source{}, err
	}
	name, _, _ := strings.Cut(rest, ",")
	if name == "onoff" {
		o, err := parseOnOff(rest, seed)
		if err != nil {
			return Source{}, err
		}
		return o.Source(), nil
	}
	if src, ok, err := parseShaped(rest, seed); ok {
		return src, err
	}
	s, err := ParseSynthetic(rest, seed)
	if err != nil {
		return Source{}, err
	}
	return s.Source(), nil
}

// MaxGenerated bounds the expected requests of a generated trace
// (synthetic:), as MaxTraceBytes bounds a file: 268,435,456 (2^28), the
// rows of a 4 GiB trace file at 16 bytes a row (`1799.5,1024,256` and its
// line end), about a week at 440 req/s. Each policy replays every request
// (a million or two a second), and a spec's rate and duration are checked
// only one by one (each below 1e9): rate=1e6 for 7 days is 6e11 requests,
// a replay of months, whose backlogs and tune's in-memory screening
// windows took the machine's memory.
const MaxGenerated = MaxTraceBytes / 16

// generatedBound refuses a generated trace spec that draws more than
// MaxGenerated requests on average, before a request is drawn, naming the
// spec, its expected count and what to lower. A spec just under it may
// still draw more (an on-off trace's bursts and gaps: rate=50,duration=2h
// drew 12% above its mean): its passes stop there (capDraws).
func generatedBound(spec string, expected float64) error {
	if !(expected > MaxGenerated) {
		return nil
	}
	return boundError{fmt.Errorf("trace %q draws about %.3g requests (its rate over its duration), more than the %d a generated trace may draw (as many as a 4 GiB trace file holds at 16 bytes a row); lower %s", spec, expected, int64(MaxGenerated), lowerKeys(spec))}
}

// ErrGeneratedBound is what errors.Is finds in the error of a generated
// trace spec refused for its mean count (generatedBound) and of a pass
// that drew past MaxGenerated (capDraws): the spec is the user's input to
// lower, whenever the pass ends (simulate and tune exit 2 on it).
var ErrGeneratedBound = errors.New("generated trace over its bound")

// boundError is an error of the generated-trace bound: its text, and
// ErrGeneratedBound to errors.Is.
type boundError struct{ error }

func (boundError) Is(target error) bool { return target == ErrGeneratedBound }

// lowerKeys names the keys of a generated trace spec that lower its count.
func lowerKeys(spec string) string {
	switch name, _, _ := strings.Cut(strings.TrimPrefix(spec, "synthetic:"), ","); name {
	case "step":
		return "low=, high= (or for=) or duration="
	case "diurnal":
		return "trough=, peak= or duration="
	}
	return "rate= or duration="
}

// capDraws is r, a pass over the generated trace spec whose mean count is
// expected, that ends with an error naming the spec once it would draw
// more than MaxGenerated requests: the bound holds for what is drawn, not
// only on average.
func capDraws(r Reader, spec string, expected float64) Reader {
	return &capped{Reader: r, spec: spec, expected: expected, most: MaxGenerated}
}

type capped struct {
	Reader
	spec     string
	expected float64
	n, most  int64
}

func (c *capped) Next() (Request, error) {
	q, err := c.Reader.Next()
	if err != nil {
		return q, err
	}
	if c.n++; c.n > c.most {
		return Request{}, boundError{fmt.Errorf("trace %q drew more than %d requests, the most a generated trace may draw (as many as a 4 GiB trace file holds at 16 bytes a row), though its rate over its duration is about %.3g: its draws ran above their mean; lower %s", c.spec, c.most, c.expected, lowerKeys(c.spec))}
	}
	return q, nil
}

// fork is a copy of the pass at its position (forker), its count with it.
func (c *capped) fork() Reader {
	r := fork(c.Reader)
	if r == nil {
		return nil
	}
	d := *c
	d.Reader = r
	return &d
}

func fileSource(name string, open func(string) (Reader, error)) (Source, error) {
	if name == "-" {
		return Source{}, errStdin(name)
	}
	st, err := os.Stat(name)
	if err != nil {
		return Source{}, missing(name, err)
	}
	if err := regular(name, st); err != nil {
		return Source{}, err
	}
	return NewSource(filepath.Base(name), 0, func() (Reader, error) { return open(name) }), nil
}

// regular refuses what is not a regular file: a directory, or a pipe or
// device (/dev/stdin, a FIFO), which can be read only once while a trace
// is read more than once (a pass per policy; load's check and replay).
func regular(name string, st os.FileInfo) error {
	switch {
	case st.IsDir():
		return fmt.Errorf("%s: is a directory, not a trace file", name)
	case !st.Mode().IsRegular():
		return fmt.Errorf("trace %s: not a regular file (a pipe or a device): a trace is read more than once (a pass per policy in simulate and tune; load's check, then its replay); save it to a file first", name)
	}
	return nil
}

// errStdin refuses "-", which names standard input to many commands: a
// trace is read more than once, as a pipe cannot be (regular). It said
// "-: no such file, nor a trace spec".
func errStdin(name string) error {
	return fmt.Errorf("%q is standard input, which is not read: a trace is read more than once (a pass per policy in simulate and tune; load's check, then its replay); save it to a file first and give its path", name)
}

// detect picks a file's format from its extension or first line.
func detect(name string) (Source, error) {
	if name == "-" {
		return Source{}, errStdin(name)
	}
	if st, err := os.Stat(name); err == nil {
		if err := regular(name, st); err != nil {
			return Source{}, err // before the open: a FIFO's open blocks
		}
	}
	f, err := openTrace(name)
	if errors.Is(err, fs.ErrNotExist) {
		if kind, _, ok := strings.Cut(name, ":"); ok && kind != "" && !strings.ContainsAny(kind, `/\.`) {
			// A spec of an unknown kind, not a path.
			return Source{}, fmt.Errorf("%q: %q is not a kind of trace, and no file has that name (want %s)", name, kind+":", Formats)
		}
		if !strings.ContainsAny(name, `/\.`) { // a word: a misspelt spec as likely as a path
			return Source{}, fmt.Errorf("%s: no such file, nor a trace spec (want %s)", name, Formats)
		}
	}
	if err != nil {
		return Source{}, missing(name, err)
	}
	defer f.Close()
	first, err := bufio.NewReader(io.LimitReader(f, MaxLine)).ReadString('\n')
	if err != nil && err != io.EOF {
		return Source{}, fmt.Errorf("trace %s: %w", name, err)
	}
	head := strings.TrimSpace(strings.TrimPrefix(first, string(utf8BOM)))
	if strings.HasSuffix(name, ".jsonl") || strings.HasSuffix(name, ".json") {
		// The extension says Mooncake; a CSV under it (renamed, exported
		// with the wrong extension) is named as such, with the way to read it.
		// The BOM is left out, as the reader leaves it out of a JSON line.
		if head != "" && !strings.ContainsAny(head[:1], `{["`) && strings.Contains(head, ",") && utf8.ValidString(head) {
			return Source{}, fmt.Errorf("%s:1: a .jsonl or .json trace is read as Mooncake's JSON lines, but this line is comma-separated (%q): give csv:%s to read it as CSV (azure: or burstgpt: for their CSVs)", name, head, name)
		}
		return fileSource(name, OpenMooncake)
	}
	if first == "" {
		return Source{}, fmt.Errorf("%s: %w", name, ErrEmpty)
	}
	fields := headerFields(head)
	switch {
	case strings.HasPrefix(head, "{"):
		return fileSource(name, OpenMooncake)
	case columns(fields, azureColumns): // quoted or not
		return fileSource(name, OpenAzureCSV)
	case looksBurstGPT(fields): // its columns in any order; OpenBurstGPT says what is wrong with a near miss
		return fileSource(name, OpenBurstGPT)
	case looksAzure(fields): // a near miss: OpenAzureCSV names the header it wants
		return fileSource(name, OpenAzureCSV)
	default:
		return fileSource(name, OpenGenericCSV)
	}
}

// missing is the error of a trace file that cannot be found or read (err
// from os.Stat or the open), without the catalogue of the specs: the name
// was a path, and the path is what is wrong. A file that does not exist
// is errors.Is fs.ErrNotExist.
func missing(name string, err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return noFile(name)
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return fmt.Errorf("%s: %w", name, pe.Err)
	}
	return err // boundedfile's own, which names the path
}

// noFile is the error of a trace path with no file.
type noFile string

func (e noFile) Error() string        { return string(e) + ": no such file" + boundedfile.Where(string(e)) }
func (e noFile) Is(target error) bool { return target == fs.ErrNotExist }

// syntheticKeyOnce refuses a synthetic spec's key given twice: each
// parser keeps the last, so rate=2,rate=3 replayed 3 req/s silently.
// Positions are the parsers' (1-based fields, the process name first).
func syntheticKeyOnce(spec string) error {
	seen := map[string]int{}
	for i, f := range strings.Split(spec, ",")[1:] {
		k, _, ok := strings.Cut(f, "=")
		if !ok {
			continue // the parser names a field without a value
		}
		if prev, dup := seen[k]; dup {
			return fmt.Errorf("synthetic field %d %s: given twice (also field %d); give it once", i+2, k, prev)
		}
		seen[k] = i + 2
	}
	return nil
}
