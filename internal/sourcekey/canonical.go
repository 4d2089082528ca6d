package sourcekey

import (
	"errors"
	"net/netip"
	neturl "net/url"
	"strconv"
	"strings"
)

// ErrNotHTTP is CanonicalURL's error for a URL that is not http:// or
// https:// with a host to name a page by ("//h/", "http:x", "http://./").
var ErrNotHTTP = errors.New("not an http:// or https:// URL with a host")

// CanonicalURL is the page an http(s) URL names, in one spelling: two URLs
// an HTTP client reads as the same page give the same string. It applies
// RFC 3986 section 6.2.2 (syntax-based normalisation) and the host forms
// a resolver treats alike:
//
//   - scheme and host in lower case; user information and fragment dropped;
//   - percent-encoding: an encoded unreserved character (ALPHA, DIGIT,
//     "-", ".", "_", "~") decoded, other escapes with upper-case hex
//     (path and query);
//   - path: dot segments removed (section 5.2.4, after decoding, so
//     "/%2e/" is "/./"), empty segments ("//") collapsed, an empty path
//     "/"; a trailing "/" kept (it names another resource);
//   - an empty query ("?" alone) dropped;
//   - host: a trailing dot dropped (the absolute DNS name), an IPv4-mapped
//     IPv6 literal ([::ffff:10.0.0.1]) as its IPv4 address, an IPv6 literal
//     in RFC 5952's form ([0:0::1] is [::1]);
//   - port: leading zeros dropped, the scheme's default (80, 443) and an
//     empty one (":") dropped.
//
// Errors: url.Parse's, and ErrNotHTTP. CanonicalURL of its own result is
// that result (FuzzCanonicalURL).
func CanonicalURL(raw string) (string, error) {
	u, err := neturl.Parse(raw)
	if err != nil {
		return "", err
	}
	scheme := strings.ToLower(u.Scheme)
	host := canonicalHost(u.Hostname())
	if host == "" || (scheme != "http" && scheme != "https") {
		return "", ErrNotHTTP
	}
	var b strings.Builder
	b.WriteString(scheme)
	b.WriteString("://")
	if strings.Contains(host, ":") { // an IPv6 literal, its zone's "%" escaped
		b.WriteString("[" + strings.ReplaceAll(host, "%", "%25") + "]")
	} else {
		b.WriteString(host)
	}
	if port := canonicalPort(u.Port()); port != "" && !(scheme == "http" && port == "80") && !(scheme == "https" && port == "443") {
		b.WriteString(":" + port)
	}
	b.WriteString(canonicalPath(normalEscapes(u.EscapedPath())))
	if q := normalEscapes(u.RawQuery); q != "" {
		b.WriteString("?" + q)
	}
	return b.String(), nil
}

// canonicalHost is a host name or IP literal (without brackets) in lower
// case, trailing dots dropped, an IP address in its canonical form (an
// IPv4-mapped IPv6 address as IPv4). "" when nothing is left.
func canonicalHost(h string) string {
	h = strings.TrimRight(strings.ToLower(h), ".")
	if a, err := netip.ParseAddr(h); err == nil {
		return a.Unmap().String()
	}
	return h
}

// canonicalPort is a port's digits without leading zeros ("" stays "").
func canonicalPort(p string) string {
	if p == "" {
		return ""
	}
	if n, err := strconv.ParseUint(p, 10, 64); err == nil {
		return strconv.FormatUint(n, 10)
	}
	if t := strings.TrimLeft(p, "0"); t != "" {
		return t
	}
	return "0"
}

// normalEscapes decodes the escapes of unreserved characters in s and
// writes the others' hex in upper case; a "%" not followed by two hex
// digits is left as it is.
func normalEscapes(s string) string {
	if !strings.Contains(s, "%") {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '%' || i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			b.WriteByte(s[i])
			continue
		}
		c := unhex(s[i+1])<<4 | unhex(s[i+2])
		if unreserved(c) {
			b.WriteByte(c)
		} else {
			b.WriteString("%" + strings.ToUpper(s[i+1:i+3]))
		}
		i += 2
	}
	return b.String()
}

// canonicalPath removes p's dot segments and empty segments (RFC 3986
// section 5.2.4; "//" as "/"), keeping a trailing "/" (also the one a
// final "." or ".." leaves); "" and "/" are "/".
func canonicalPath(p string) string {
	segs := strings.Split(p, "/")
	out := make([]string, 0, len(segs))
	trailing := false
	for i, s := range segs {
		last := i == len(segs)-1
		switch s {
		case "", ".":
			trailing = last
		case "..":
			if len(out) > 0 {
				out = out[:len(out)-1]
			}
			trailing = last
		default:
			out = append(out, s)
			trailing = false
		}
	}
	if len(out) == 0 {
		return "/"
	}
	c := "/" + strings.Join(out, "/")
	if trailing {
		c += "/"
	}
	return c
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~'
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
