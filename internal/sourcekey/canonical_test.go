package sourcekey

import (
	"fmt"
	"net/netip"
	neturl "net/url"
	"strings"
	"testing"
)

// Issue 23 item 7: URLs that an HTTP client reads as one page, each
// spelling worked out from RFC 3986 section 6.2.2 (and 5.2.4 for dot
// segments), name one page; those that name another stay apart.
func TestCanonicalURL(t *testing.T) {
	same := [][]string{
		{"http://r:8000/r1", "http://r:8000/./r1", "http://r:8000//r1", "http://r:8000/r1?", "http://r:8000/%72%31",
			"http://r:8000/x/../r1", "http://r:8000/%2E/r1", "http://R:8000/r1", "http://r.:8000/r1", "http://r:08000/r1",
			"HTTP://u:p@r:8000/r1#frag"},
		{"http://10.0.0.1/metrics", "http://[::ffff:10.0.0.1]/metrics", "http://[::FFFF:a00:1]:80/metrics", "http://10.0.0.1.:/metrics"},
		{"http://[::1]/m", "http://[0:0:0:0:0:0:0:1]/m", "http://[::1]:80/m"},
		{"https://h/", "https://h", "https://h:443", "https://h/.", "https://h/a/.."},
		{"http://h/a%2fb", "http://h/a%2Fb"}, // an escaped "/" is another character than "/": kept, hex upper case
		{"http://h/m?x=%7e&y=1", "http://h/m?x=~&y=1"},
	}
	for _, group := range same {
		want, err := CanonicalURL(group[0])
		if err != nil {
			t.Fatalf("%s: %v", group[0], err)
		}
		for _, u := range group[1:] {
			if got, err := CanonicalURL(u); err != nil || got != want {
				t.Errorf("%s: %q %v, want %q (the same page as %s)", u, got, err, want, group[0])
			}
		}
	}
	if got, _ := CanonicalURL("http://R:8000/./X/%7e/"); got != "http://r:8000/X/~/" {
		t.Errorf("canonical form %q, want http://r:8000/X/~/ (path case kept, trailing slash kept)", got)
	}
	apart := [][2]string{
		{"http://h/r1", "http://h/r1/"},      // a trailing slash is another resource
		{"http://h/r1", "http://h/R1"},       // paths are case-sensitive
		{"http://h/a/b", "http://h/a%2Fb"},   // "/" against an escaped "/"
		{"http://h/m?x=1", "http://h/m?x=2"}, // another query
		{"http://h:8000/m", "http://h:8001/m"},
		{"http://h/m", "https://h/m"},
	}
	for _, p := range apart {
		a, _ := CanonicalURL(p[0])
		b, _ := CanonicalURL(p[1])
		if a == b {
			t.Errorf("%s and %s both %q: different pages", p[0], p[1], a)
		}
	}
	for _, bad := range []string{"http:x", "http://./", "http://[::1", "//h/", "ftp://h/"} {
		if got, err := CanonicalURL(bad); err == nil {
			t.Errorf("%s: %q, want an error", bad, got)
		}
	}
}

// The case: /./r1 beside /r1 is one page read twice.
func TestDuplicatesDotSegment(t *testing.T) {
	got := Duplicates([]string{"http://r:8000/r1", "http://r:8000/./r1", "http://r:8000/r2"})
	if got[1] != 0 || got[2] != -1 {
		t.Errorf("Duplicates = %v, want [-1 0 -1]", got)
	}
}

// FuzzCanonicalURL: CanonicalURL is idempotent, and spellings built from
// a canonical URL by one RFC 3986 equivalence (host case, trailing dot,
// default port, IPv4-mapped IPv6, "/./", "//", a trailing "?", an
// unreserved character percent-encoded) map back to it.
func FuzzCanonicalURL(f *testing.F) {
	for _, s := range []string{"http://r:8000/r1", "http://R.:80/./a//b/../c?", "https://[::ffff:10.0.0.1]:0443/%7e?q=%2f#f",
		"http://u:p@h/", "http://h/a/..", "http://[fe80::1%25eth0]/m", "http://h:/", "http://%C3%A9/x", "http://h/%zz?%zz"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		c, err := CanonicalURL(raw)
		if err != nil {
			return
		}
		c2, err := CanonicalURL(c)
		if err != nil || c2 != c {
			t.Fatalf("CanonicalURL(%q) = %q; of that %q %v", raw, c, c2, err)
		}
		u, err := neturl.Parse(c)
		if err != nil {
			t.Fatalf("%q does not parse: %v", c, err)
		}
		after := strings.TrimPrefix(c, u.Scheme+"://")
		slash := strings.IndexByte(after, '/') // a canonical URL has a path
		hostport, rest := after[:slash], after[slash:]
		path, query, hasQuery := strings.Cut(rest, "?")
		host, port := u.Hostname(), u.Port()
		def := map[string]string{"http": "80", "https": "443"}[u.Scheme]
		join := func(h, p string) string {
			if strings.Contains(h, ":") {
				h = "[" + strings.ReplaceAll(h, "%", "%25") + "]"
			}
			if p != "" {
				h += ":" + p
			}
			return h
		}
		variants := []string{
			u.Scheme + "://" + asciiUpper(hostport) + rest,
			u.Scheme + "://" + hostport + "/." + rest,
			u.Scheme + "://" + hostport + "/" + rest,
			u.Scheme + "://" + hostport + "/x/.." + rest,
			strings.ToUpper(u.Scheme) + "://" + hostport + rest,
			c + "#fragment",
		}
		if strings.Contains(host, "%") { // a zone: case-sensitive
			variants = variants[1:]
		}
		if !hasQuery {
			variants = append(variants, c+"?")
		}
		if port == "" {
			variants = append(variants, u.Scheme+"://"+join(host, def)+rest)
		}
		if _, err := netip.ParseAddr(host); err != nil {
			variants = append(variants, u.Scheme+"://"+join(host+".", port)+rest)
		} else if a := netip.MustParseAddr(host); a.Is4() {
			variants = append(variants, u.Scheme+"://"+join("::ffff:"+host, port)+rest)
		}
		for i := 0; i < len(path); i++ {
			if path[i] == '%' {
				i += 2 // an escape's hex digits are not characters of the path
				continue
			}
			if unreserved(path[i]) {
				enc := path[:i] + fmt.Sprintf("%%%x", path[i]) + path[i+1:]
				if hasQuery {
					enc += "?" + query
				}
				variants = append(variants, u.Scheme+"://"+hostport+enc)
				break
			}
		}
		for _, v := range variants {
			if got, err := CanonicalURL(v); err != nil || got != c {
				t.Errorf("%q (from %q): %q %v, want %q", v, raw, got, err, c)
			}
		}
	})
}

// asciiUpper is s with ASCII letters in upper case (the case a host's
// name folds; strings.ToUpper folds more, "ı" to "I").
func asciiUpper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// TestProbable: for the config's warning of two targets on one page, the
// loopback spellings of one port are one page (localhost reaches
// 127.0.0.1 or ::1); Of keeps them apart (its duplicates are refused, and
// a server on 127.0.0.1 alone beside another on [::1] alone are two). Other
// loopback addresses, another port, an empty path (the reader fetches "/")
// and a trailing slash stay other pages.
func TestProbable(t *testing.T) {
	want := "http://localhost:9090/metrics"
	for _, u := range []string{"http://localhost:9090/metrics", "http://127.0.0.1:9090/metrics", "http://[::1]:9090/metrics",
		"HTTP://LocalHost.:9090/metrics", "http://[::ffff:127.0.0.1]:9090/./metrics", "http://u:p@127.0.0.1:09090/metrics#x"} {
		if got := Probable(u); got != want {
			t.Errorf("Probable(%s) = %q, want %q", u, got, want)
		}
	}
	if a, b := Of("http://localhost:9090/metrics"), Of("http://127.0.0.1:9090/metrics"); a == b {
		t.Errorf("Of: localhost and 127.0.0.1 both %q; want them apart (a duplicate there is refused)", a)
	}
	if got := Probable("https://127.0.0.1/m?x=%7e"); got != "https://localhost/m?x=~" {
		t.Errorf("default port: %q, want https://localhost/m?x=~", got)
	}
	for _, other := range []string{"http://127.0.0.2:9090/metrics", "http://localhost:9091/metrics", "http://localhost:9090/", "http://localhost:9090/metrics/", "http://localhost.llm:9090/metrics"} {
		if got := Probable(other); got == want {
			t.Errorf("Probable(%s) = %q: another page", other, got)
		}
	}
	for _, s := range []string{"-", "pages/a.prom", "ftp://h/x", "http://[::1"} {
		if got := Probable(s); got != Of(s) {
			t.Errorf("Probable(%q) = %q, want Of's %q", s, got, Of(s))
		}
	}
}
