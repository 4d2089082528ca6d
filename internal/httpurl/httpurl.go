// Package httpurl checks the http(s) URLs infscale is given (an upstream,
// a Prometheus, a /metrics page): one rule for every flag and config key
// that takes one. It has no dependencies beyond the standard library.
package httpurl

import (
	"errors"
	"fmt"
	"net/url"
	"strconv"
)

// ErrNotHTTP is Check's error for a URL that is not http:// or https://
// with a host.
var ErrNotHTTP = errors.New("not an http:// or https:// URL with a host")

// ErrPort is wrapped by Check's error for a port outside 1..65535 (TCP's
// port numbers; 0 is no port to connect to), which net/url accepts.
var ErrPort = errors.New("port out of range")

// Parse parses s and checks it with Check: the URL, or an error (the
// parse error, ErrNotHTTP, or one wrapping ErrPort).
func Parse(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, err
	}
	if err := Check(u); err != nil {
		return nil, err
	}
	return u, nil
}

// Check reports whether u is an absolute http or https URL (scheme in
// lower case, as url.Parse leaves it) with a host and, when it names a
// port, a port 1 to 65535: nil, ErrNotHTTP, or an error wrapping ErrPort
// that names the port ("port 99999: want 1 to 65535"). An empty port
// ("http://h:/") is the scheme's default, as net/http reads it.
func Check(u *url.URL) error {
	if u == nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ErrNotHTTP
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return portError(p)
		}
	}
	return nil
}

// portError is a port outside 1..65535; it is ErrPort.
type portError string

func (p portError) Error() string { return fmt.Sprintf("port %s: want 1 to 65535", string(p)) }

func (p portError) Is(target error) bool { return target == ErrPort }
