package scrape

import (
	"errors"
	"fmt"
	"strings"

	"github.com/infscale/infscale/pkg/modelserver"
)

// detect returns the first server (modelserver.Servers order) whose running or
// waiting families have a finite sample on the page; else whose running or
// waiting families appear (declared or with samples); else whose other
// families appear; else one of whose name prefixes starts a family on the
// page; else Unknown. (A server whose queue is only declared does not win
// over one whose queue has values.)
func detect(raw *rawPage) modelserver.Server {
	for _, pass := range []struct {
		names func(modelserver.Families) []string
		on    func(string) bool
	}{
		{modelserver.Families.Queue, raw.hasFinite},
		{modelserver.Families.Queue, raw.has},
		{modelserver.Families.All, raw.has},
	} {
		for _, s := range modelserver.Servers() {
			for _, n := range pass.names(s.Families()) {
				if pass.on(n) {
					return s
				}
			}
		}
	}
	for _, s := range modelserver.Servers() {
		for _, prefix := range s.Families().Prefixes {
			for n := range raw.byName {
				if strings.HasPrefix(n, prefix) {
					return s
				}
			}
			for n := range raw.declared {
				if strings.HasPrefix(n, prefix) {
					return s
				}
			}
		}
	}
	return modelserver.Unknown
}

func noProfile(source string, raw *rawPage) *NoProfileError {
	e := &NoProfileError{Source: source}
	for _, s := range modelserver.Servers() {
		e.LookedFor = append(e.LookedFor, ServerFamilies{Server: s.String(), Families: s.Families().All()})
	}
	seen := map[string]bool{}
	for n := range raw.declared {
		seen[n] = true
	}
	for n := range raw.byName {
		seen[raw.family[n]] = true
	}
	e.Seen = sortedKeys(seen)
	return e
}

// carries reports whether any of s's families, or a family in its name
// prefixes, is on the page (declared or with samples).
func carries(raw *rawPage, s modelserver.Server) bool {
	for _, n := range s.Families().All() {
		if raw.has(n) {
			return true
		}
	}
	for _, prefix := range s.Families().Prefixes {
		for n := range raw.byName {
			if strings.HasPrefix(n, prefix) {
				return true
			}
		}
		for n := range raw.declared {
			if strings.HasPrefix(n, prefix) {
				return true
			}
		}
	}
	return false
}

// otherServer refuses a page read as server that carries none of its
// families but another server's: the page is that server's (a wrong
// server: in a config, or a wrong --server), and read as server every
// signal on it would be unknown for no reason the user could see. A page
// with neither (a replica still starting) is left to the readers.
//
// A page that carries some of server's families but not its running
// gauge, while another server's running gauge has values, is refused the
// same way: the load is in the other server's families (Triton with its
// vLLM backend exports Triton's request counters beside vLLM's gauges; read
// as triton its running requests are unknown).
func otherServer(raw *rawPage, server modelserver.Server) error {
	if carries(raw, server) {
		for _, n := range server.Families().Running {
			if raw.has(n) {
				return nil
			}
		}
		for _, s := range modelserver.Servers() {
			for _, n := range s.Families().Running {
				if s != server && raw.hasFinite(n) {
					return &OtherServerError{Page: s, Want: server, Running: n}
				}
			}
		}
		return nil
	}
	other := detect(raw)
	if other == modelserver.Unknown || other == server {
		return nil
	}
	return &OtherServerError{Page: other, Want: server}
}

// OtherServerError is a page read as server Want that carries none of
// Want's families but Page's (otherServer); a PageError's Err.
type OtherServerError struct {
	Page, Want modelserver.Server
	// Running is Page's running family on a page that also carries some
	// of Want's families but not Want's running gauge; "" when the page
	// carries none of Want's families.
	Running string
}

func (e *OtherServerError) Error() string {
	if e.Running != "" {
		return fmt.Sprintf("the page's running requests are %s's (%s), and %s's running gauge (%s) is not on it: read as %s the load is unknown; give the server as %s (server: in the config, --server on the command line; Triton with its vLLM backend is read as vllm), or auto to detect it",
			e.Page, e.Running, e.Want, strings.Join(e.Want.Families().Running, ", "), e.Want, e.Page)
	}
	return fmt.Sprintf("the page is %s's, not %s's: none of %s's families (%s) is on it; give the server as %s (server: in the config, --server on the command line), or auto to detect it",
		e.Page, e.Want, e.Want, strings.Join(e.Want.Families().Queue(), ", "), e.Page)
}

// EPPRefused reports the source of an llm-d Endpoint Picker's page among
// a read's outcomes: read with server auto as one (p.Server EPP), or
// refused as another server's (an OtherServerError whose page is the
// EPP's). Readers that count each page as one replica refuse such a page:
// it describes its whole InferencePool.
func EPPRefused(p *Page, err error) (source string, ok bool) {
	if p != nil && p.Server == modelserver.EPP {
		return p.Source, true
	}
	var pe *PageError
	var ose *OtherServerError
	if errors.As(err, &pe) && errors.As(pe.Err, &ose) && ose.Page == modelserver.EPP {
		return pe.Source, true
	}
	return "", false
}
