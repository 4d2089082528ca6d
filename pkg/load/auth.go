package load

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
)

// Where a field of Config.Header came from (HeaderSources' values).
const (
	// FromAPIKey is the environment variable OPENAI_API_KEY, sent as
	// Authorization: Bearer KEY (as vllm bench serve sends it).
	FromAPIKey = "OPENAI_API_KEY"
	// FromHeaderFlag is a --header 'NAME: VALUE' item (-H).
	FromHeaderFlag = "--header"
	// FromURL is the URL's user:password, sent as Authorization: Basic
	// (as Go's client and curl send it).
	FromURL = "the URL's user:password"
)

// HeaderSources maps a field of Config.Header, by its canonical name
// (http.CanonicalHeaderKey), to where its value came from: FromAPIKey,
// FromHeaderFlag or FromURL.
type HeaderSources map[string]string

// authSchemes are the Authorization schemes a 401 or 403 names (RFC 9110's
// registry's common ones and the API keys' usual words); any other first
// word of a value is not said, since it may be part of a key.
var authSchemes = []string{"Basic", "Bearer", "Digest", "Token", "ApiKey", "Api-Key", "Key", "Negotiate"}

// authScheme describes an Authorization value by its scheme, never its
// credentials: "Bearer" for "Bearer KEY"; "no scheme" for a value of one
// word (a key alone, which vLLM's --api-key refuses); "a scheme load does
// not name" for any other first word.
func authScheme(value string) string {
	word, _, ok := strings.Cut(strings.TrimSpace(value), " ")
	if !ok {
		return "no scheme"
	}
	for _, s := range authSchemes {
		if strings.EqualFold(word, s) {
			return s
		}
	}
	return "a scheme load does not name"
}

// noKeyHint is statusHint's for a 401 or 403 of a request sent without a
// credential: how to give the key.
const noKeyHint = "load sent no API key: give the server's key in the environment variable OPENAI_API_KEY " +
	"(sent as Authorization: Bearer KEY, as vllm bench serve does), or a gateway's header with --header 'NAME: VALUE'"

// statusHint says what to do about a status that is no fault of the
// model's serving (the request never reached it, or a gateway refused
// it), "" for any other. A 401 or 403 names each credential of header
// (isCredential) that was sent, with its scheme and where it came from
// (sources), never its value, and what to do about that source: a
// vLLM, SGLang or llama.cpp started with --api-key takes
// Authorization: Bearer KEY alone. Without a credential it says how to
// give the key.
func statusHint(code int, header http.Header, sources HeaderSources) string {
	if code != http.StatusUnauthorized && code != http.StatusForbidden {
		return statusHints[code]
	}
	var sent, todo []string
	advise := func(s string) {
		if !slices.Contains(todo, s) {
			todo = append(todo, s)
		}
	}
	for _, name := range slices.Sorted(maps.Keys(header)) {
		name = http.CanonicalHeaderKey(name)
		if !isCredential(name) {
			continue
		}
		from := sources[name]
		what, scheme := name, ""
		if name == "Authorization" || name == "Proxy-Authorization" {
			scheme = authScheme(header.Get(name))
			if strings.Contains(scheme, " ") {
				what += " with " + scheme
			} else {
				what += ": " + scheme
			}
		}
		if from != "" {
			what += " from " + from
		}
		sent = append(sent, what)
		switch {
		case name != "Authorization":
			if from == FromHeaderFlag {
				advise(fmt.Sprintf("check the value given with --header %s, and that the server or its gateway reads that header", name))
			} else {
				advise("check that the key is the one the server or its gateway takes")
			}
		case scheme != "Bearer" && from == FromURL:
			advise("a server started with --api-key (vLLM, SGLang, llama.cpp) takes its key as Authorization: Bearer KEY, not Basic: " +
				"give the key in OPENAI_API_KEY and the URL without user:password, unless a gateway before the server asks for Basic")
		case scheme != "Bearer":
			advise("a server started with --api-key (vLLM, SGLang, llama.cpp) takes its key as Authorization: Bearer KEY: " +
				"give the key in OPENAI_API_KEY, or --header 'Authorization: Bearer KEY'")
		case from == FromAPIKey:
			advise("check that OPENAI_API_KEY holds the key the server was started with (vLLM's, SGLang's or llama.cpp's --api-key) or that its gateway takes")
		case from == FromHeaderFlag:
			advise("check the key given with --header Authorization (it replaces OPENAI_API_KEY's): the server's --api-key, or its gateway's")
		default:
			advise("check that the key is the one the server (vLLM's --api-key) or its gateway takes")
		}
	}
	if len(sent) == 0 {
		return noKeyHint
	}
	return fmt.Sprintf("the server refused the credentials load sent (%s; values never shown): %s", strings.Join(sent, ", "), strings.Join(todo, "; "))
}

// refusesEveryRequest reports whether code is a status the server or a
// gateway before it answers whatever the path: a refused key (401, 403)
// or a rate limit (429). Said after GET /v1/models, the run's requests
// would get it too, so statusHint's advice is what to do, not a flag
// (--served-model-name) that would do without the model list.
func refusesEveryRequest(code int) bool {
	return code == http.StatusUnauthorized || code == http.StatusForbidden || code == http.StatusTooManyRequests
}

// statusHints is statusHint's table.
var statusHints = map[int]string{
	http.StatusNotFound: "check the URL's path, --endpoint and --served-model-name (GET /v1/models lists the names)",
	http.StatusTooManyRequests: "the server or a gateway before it limits the request rate: what is measured is the limit, not the model; " +
		"lift it for the test or load below it",
	http.StatusServiceUnavailable: "the server or a gateway before it is unavailable: not ready yet (llama.cpp's server while it loads the model, " +
		"a gateway without a ready server behind it: --ready-check-timeout 10m waits for it before the first point) or overloaded",
}
