package scrape

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// Sentinels. Invalid input (ErrInvalidPage, ErrNoProfile, ErrSource) is the
// user's to fix (CLI exit 2); ErrFetch is a runtime failure (exit 1).
var (
	// ErrInvalidPage: the bytes are not a Prometheus text / OpenMetrics page
	// (parse error, JSON, HTML, unsupported content type, too large).
	ErrInvalidPage = errors.New("invalid metrics page")
	// ErrNoProfile: a page parsed but carries no family of any known server
	// and no server was given.
	ErrNoProfile = errors.New("no known server profile")
	// ErrSource: the page source is not a readable file, an http(s) URL or "-".
	ErrSource = errors.New("invalid page source")
	// ErrFetch: the page could not be fetched (connection refused, timeout,
	// non-2xx status, read error). A runtime failure: the signal is UNKNOWN.
	ErrFetch = errors.New("cannot fetch metrics page")
)

// PageError is a page that does not parse. Error() reads
// "SOURCE:LINE: invalid metrics page: MESSAGE"; errors.Is(err,
// ErrInvalidPage) holds.
type PageError struct {
	// Source is the file name, URL or "stdin".
	Source string
	// Line is the 1-based line of the problem, 0 when not known.
	Line int
	// Err is the parser's message.
	Err error
	// What names the fault when the page is well formed but not what
	// infscale reads ("" is ErrInvalidPage's "invalid metrics page"; a
	// gateway's page of several workers is "not one replica's metrics
	// page"); errors.Is(err, ErrInvalidPage) holds either way.
	What string
}

func (e *PageError) Error() string {
	loc := e.Source
	if e.Line > 0 {
		loc = fmt.Sprintf("%s:%d", e.Source, e.Line)
	}
	what := e.What
	if what == "" {
		what = ErrInvalidPage.Error()
	}
	return fmt.Sprintf("%s: %s: %s", loc, what, clip(e.Err.Error()))
}

// maxMessage bounds the parser's message in PageError.Error: Prometheus's
// parser quotes the whole offending line, which can be megabytes long.
const maxMessage = 512

// clip shortens msg to maxMessage bytes (on a rune boundary), saying how
// long it was.
func clip(msg string) string {
	if len(msg) <= maxMessage {
		return msg
	}
	cut := maxMessage
	for cut > 0 && !utf8.RuneStart(msg[cut]) {
		cut--
	}
	return fmt.Sprintf("%s… (message cut, %d bytes in all)", msg[:cut], len(msg))
}

// Unwrap returns ErrInvalidPage and the parser's error.
func (e *PageError) Unwrap() []error { return []error{ErrInvalidPage, e.Err} }

// NoProfileError is a page on which no known server's families appear.
// errors.Is(err, ErrNoProfile) holds.
type NoProfileError struct {
	// Source is the file name, URL or "stdin".
	Source string
	// LookedFor maps each server name to the family names looked for.
	LookedFor []ServerFamilies
	// Seen is the families the page does carry (with or without samples).
	Seen []string
	// Size is the page's length in bytes; Blank is true when it holds
	// nothing but white space (an empty page).
	Size  int
	Blank bool
}

// ServerFamilies is one server's families, for NoProfileError.
type ServerFamilies struct {
	Server   string
	Families []string
}

func (e *NoProfileError) Error() string {
	var b strings.Builder
	// Nothing to tell a server by: say so, not which families every
	// server would have had.
	switch {
	case e.Blank:
		blank := ""
		if e.Size > 0 {
			blank = ", white space only"
		}
		fmt.Fprintf(&b, "%s: %v: the page is empty (%d bytes%s): want a model server's /metrics text, e.g. saved with curl -s http://HOST:PORT/metrics", e.Source, ErrNoProfile, e.Size, blank)
		return b.String()
	case len(e.Seen) == 0:
		fmt.Fprintf(&b, "%s: %v: the page has no metric families (comments only): want a model server's /metrics text", e.Source, ErrNoProfile)
		return b.String()
	}
	if runtime := runtimeOnly(e.Seen); runtime != "" {
		// A model server whose metrics logger is off: listing every
		// server's families would not say so.
		fmt.Fprintf(&b, "%s: %v: the page has only the process and runtime families a client library exports (%s), none of a model server: is its metrics logger on? (vLLM 0.5.4 exported none, vllm issue #7188; vLLM with --disable-log-stats exports none)", e.Source, ErrNoProfile, runtime)
		return b.String()
	}
	fmt.Fprintf(&b, "%s: %v: none of these families is on the page (use --server to force one):", e.Source, ErrNoProfile)
	for _, sf := range e.LookedFor {
		fmt.Fprintf(&b, "\n  %s: %s", sf.Server, strings.Join(sf.Families, ", "))
	}
	seen := e.Seen
	more := ""
	if len(seen) > 10 {
		more = fmt.Sprintf(", … (%d in all)", len(seen))
		seen = seen[:10]
	}
	fmt.Fprintf(&b, "\nthe page has: %s%s", strings.Join(seen, ", "), more)
	return b.String()
}

// runtimePrefixes name the families a Prometheus client library (or a
// web framework's instrumentation, such as prometheus-fastapi-instrumentator's
// http_*) exports on its own, in every process.
var runtimePrefixes = []string{"python_", "process_", "go_", "promhttp_", "http_"}

// runtimeOnly lists, as "python_*, process_*", the runtimePrefixes of
// families when every family has one; "" when one has none.
func runtimeOnly(families []string) string {
	has := make([]bool, len(runtimePrefixes))
	for _, f := range families {
		i := slices.IndexFunc(runtimePrefixes, func(p string) bool { return strings.HasPrefix(f, p) })
		if i < 0 {
			return ""
		}
		has[i] = true
	}
	var present []string
	for i, prefix := range runtimePrefixes {
		if has[i] {
			present = append(present, prefix+"*")
		}
	}
	return strings.Join(present, ", ")
}

// Unwrap returns ErrNoProfile.
func (e *NoProfileError) Unwrap() error { return ErrNoProfile }

// IsRuntime reports whether err is a runtime failure (fetch) rather than
// invalid input.
func IsRuntime(err error) bool { return errors.Is(err, ErrFetch) }
