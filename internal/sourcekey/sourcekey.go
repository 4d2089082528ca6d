// Package sourcekey names the page a /metrics source (an http(s) URL or a
// file path) refers to, so that the same page named twice is found. It has
// no dependencies beyond the standard library: pkg/config and pkg/scrape
// both use it.
package sourcekey

import (
	neturl "net/url"
	"path/filepath"
	"strings"
)

// Of is the page a source names, for finding the same page named
// twice: for an http(s) URL its CanonicalURL; for a file path the
// absolute, cleaned path with symbolic links resolved when the file
// exists; "-" is itself. A source that does not parse is itself (its
// reader reports it).
func Of(src string) string {
	switch {
	case src == "-":
		return src
	case IsHTTP(src):
		if c, err := CanonicalURL(src); err == nil {
			return c
		}
		return src
	case strings.Contains(src, "://"):
		return src
	}
	p, err := filepath.Abs(src)
	if err != nil {
		return filepath.Clean(src)
	}
	if r, err := filepath.EvalSymlinks(p); err == nil {
		return r
	}
	return p
}

// Loopback is the host Probable writes for a loopback host.
const Loopback = "localhost"

// Probable is the page a source most likely names, for warnings: Of, with
// a loopback host (localhost, 127.0.0.1, [::1], in any spelling Of
// folds) written as Loopback. localhost resolves to 127.0.0.1 or ::1
// (RFC 6761), and a server on loopback almost always listens on what
// localhost reaches; but a server on 127.0.0.1 alone beside another on
// [::1] alone, one port, are two pages, so Of (whose duplicates are
// refused) keeps them apart. Other addresses of 127.0.0.0/8 are other
// listeners (127.0.0.2 is no 127.0.0.1), and an empty path ("/") is no
// /metrics (the reader fetches the URL as written), nor is /metrics/
// (the EPP's metrics server answers /metrics alone): each stays apart.
func Probable(src string) string {
	k := Of(src)
	c, err := CanonicalURL(k)
	if err != nil || c != k {
		return k // not an http(s) URL, or one CanonicalURL refuses
	}
	scheme, rest, _ := strings.Cut(k, "://")
	hostport, path, _ := strings.Cut(rest, "/") // a canonical URL has a path
	u := neturl.URL{Host: hostport}
	switch u.Hostname() {
	case "localhost", "127.0.0.1", "::1":
		if p := u.Port(); p != "" {
			return scheme + "://" + Loopback + ":" + p + "/" + path
		}
		return scheme + "://" + Loopback + "/" + path
	}
	return k
}

// IsHTTP reports whether src is an http:// or https:// URL, the scheme in
// any case (URL schemes are case-insensitive, RFC 3986 section 3.1).
func IsHTTP(src string) bool {
	return hasPrefixFold(src, "http://") || hasPrefixFold(src, "https://")
}

func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// Duplicates finds the sources that name a page an earlier one already
// names (Of): for each i, the index of the first source naming the
// same page, or -1. Read twice, one replica would vote twice (its requests
// counted twice, one replica counted as two).
func Duplicates(srcs []string) []int {
	first := make(map[string]int, len(srcs))
	out := make([]int, len(srcs))
	for i, s := range srcs {
		k := Of(s)
		if j, seen := first[k]; seen {
			out[i] = j
			continue
		}
		first[k], out[i] = i, -1
	}
	return out
}

// Redact is src with a URL's password shown as "xxxxx" (url.URL.Redacted),
// for errors and logs; anything else is src itself.
func Redact(src string) string {
	if u, err := neturl.Parse(src); err == nil {
		if _, has := u.User.Password(); has {
			return u.Redacted()
		}
	}
	return src
}
