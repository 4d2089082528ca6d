package promql

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"syscall"

	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
)

// Reason says why a signal is unknown. Every Reason makes the signal NaN;
// none of them ever reads as 0.
type Reason int

// The reasons, as exported in infscale_query_errors_total{reason}.
const (
	// ReasonTimeout: the query exceeded its deadline (client context or
	// Prometheus's own query timeout, errorType "timeout").
	ReasonTimeout Reason = iota + 1
	// ReasonUnavailable: Prometheus could not be reached, answered 5xx, or
	// answered a 4xx that is not about the query (notTheQuery: 429 Too Many
	// Requests, 401 or 403 for the credentials, 404 for the URL): the
	// query is not at fault, so a batch is not retried target by target.
	ReasonUnavailable
	// ReasonBadData: Prometheus rejected the query (400 bad_data, 422
	// execution error such as many-to-many matching).
	ReasonBadData
	// ReasonCanceled: the caller's context was canceled (shutdown).
	ReasonCanceled
	// ReasonBadResponse: the answer was not a Prometheus API response or had
	// an unexpected result type.
	ReasonBadResponse
	// ReasonEmpty: the query succeeded with no series (family absent, no
	// live pod, a target that is down). Unknown, not 0.
	ReasonEmpty
	// ReasonNaN: the value was NaN or ±Inf (e.g. histogram_quantile with no
	// request in the window, a division by zero).
	ReasonNaN
	// ReasonAmbiguous: several series with different values for one target
	// where one number was expected (a user query that is not aggregated).
	ReasonAmbiguous
	// ReasonUnsupported: the server profile has no metric family for the
	// signal (llama.cpp has no KV gauge).
	ReasonUnsupported
	// ReasonInvalidQuery: the query does not parse (user override).
	ReasonInvalidQuery
	// ReasonPartial: the answer came with a sign that some of the data
	// was not read (Partial: a Thanos partial response's warning, a
	// remote-read failure, VictoriaMetrics's isPartial): series of the
	// part not read are missing, so a sum or count reads low.
	ReasonPartial
)

var reasonNames = [...]string{
	ReasonTimeout: "timeout", ReasonUnavailable: "unavailable", ReasonBadData: "bad_data",
	ReasonCanceled: "canceled", ReasonBadResponse: "bad_response", ReasonEmpty: "empty",
	ReasonNaN: "nan", ReasonAmbiguous: "ambiguous", ReasonUnsupported: "unsupported",
	ReasonInvalidQuery: "invalid_query", ReasonPartial: "partial",
}

// String returns the snake_case label value ("timeout", "empty", ...).
func (r Reason) String() string {
	if r > 0 && int(r) < len(reasonNames) {
		return reasonNames[r]
	}
	return fmt.Sprintf("Reason(%d)", int(r))
}

// QueryError is a failed or unusable query result.
type QueryError struct {
	// Reason classifies the failure.
	Reason Reason
	// Query is the PromQL sent; of a batched query (the queries of many
	// targets in one, megabytes) its first 201 bytes. Error shows at most
	// 200 bytes of it.
	Query string
	// Err is the underlying error, if any (*v1.Error, a net error, ...).
	Err error
}

// Error reads "promql: <reason>: <detail> (query: <query, at most 200 bytes>)".
func (e *QueryError) Error() string {
	q := e.Query
	if len(q) > 200 {
		q = q[:200] + "..."
	}
	var b strings.Builder
	fmt.Fprintf(&b, "promql: %s", e.Reason)
	if e.Err != nil {
		detail := e.Err.Error()
		if ae, ok := errors.AsType[*v1.Error](e.Err); ok && string(ae.Type) == e.Reason.String() {
			detail = ae.Msg // "bad_response: bad_response: ..." said once
			switch {
			case ae.Type == v1.ErrBadResponse && ae.Msg == "unexpected end of JSON input":
				// Empty, or cut part way: no HTML page's first character.
				detail += " (the answer ended inside its JSON, or was empty: a proxy or a closed connection cut it, or the URL is not a Prometheus API root; give the base URL, e.g. http://prometheus:9090)"
			case ae.Type == v1.ErrBadResponse && notJSON(ae.Msg):
				detail += " (the URL answered a body that is not JSON, such as an HTML page: it is probably not a Prometheus API root; give the base URL, e.g. http://prometheus:9090)"
			}
		}
		if ae, ok := errors.AsType[*v1.Error](e.Err); ok && notTheQuery(ae) {
			// "client_error: client error: 429": the type is not the reason.
			detail = strings.TrimPrefix(detail, string(v1.ErrClient)+": ")
			switch clientStatus(ae) {
			case http.StatusTooManyRequests:
				detail = strings.Replace(detail, ae.Msg, ae.Msg+" Too Many Requests", 1) +
					" (Prometheus, or a proxy in front of it, limits the rate of queries; the signal is unknown until it answers: raise the limit for infscale, or query less often)"
			case http.StatusUnauthorized, http.StatusForbidden, http.StatusProxyAuthRequired:
				detail += " (Prometheus, or a proxy in front of it, refused infscale's credentials: check the prometheus block's authorization, basic_auth, oauth2 or tls_config, and the token's permissions)"
			}
		}
		if ae, ok := errors.AsType[*v1.Error](e.Err); ok && ae.Type == v1.ErrServer {
			// A 5xx's body is not decoded by client_golang (400 and 422
			// only): Prometheus's own words ("query timed out in
			// expression evaluation", "TSDB not ready") were lost, and
			// the line said "server error: 503" alone.
			if typ, msg := bodyError(ae.Detail); msg != "" {
				if typ != "" && typ != e.Reason.String() { // the reason is said once
					msg = typ + ": " + msg
				}
				detail += " (Prometheus's error: " + msg + ")"
			}
		}
		if ae, ok := errors.AsType[*v1.Error](e.Err); ok && clientStatus(ae) == http.StatusNotFound {
			// Prometheus answers a bad query 400 or 422, never 404: the
			// path is wrong.
			detail += " (nothing answers at the URL's /api/v1/: it is probably not a Prometheus API root, or its path prefix is wrong; give the base URL, e.g. http://prometheus:9090)"
		}
		detail += TransportHint(e.Err)
		fmt.Fprintf(&b, ": %s", detail)
	}
	if q != "" {
		fmt.Fprintf(&b, " (query: %s)", q)
	}
	return b.String()
}

// TransportHint is what to check when a query got no answer because of
// where it was sent, " (...)" to append to err's text, or "" for any other
// error: a host name that does not resolve, nothing listening (both said
// at once, not retried: Retryable), and a TLS handshake that failed on the
// server's certificate or on a server that speaks plain HTTP (Go's words
// alone, "x509: certificate signed by unknown authority", named no knob).
func TransportHint(err error) string {
	if _, dns := errors.AsType[*net.DNSError](err); dns {
		return " (the URL's host name does not resolve here: check the URL)"
	}
	if errors.Is(err, syscall.ECONNREFUSED) {
		return " (nothing listens there: is Prometheus up? check the URL's host and port)"
	}
	if _, ok := errors.AsType[x509.UnknownAuthorityError](err); ok {
		return " (the server's certificate is signed by a CA infscale does not trust: give that CA as the prometheus block's tls_config.ca_file)"
	}
	if _, ok := errors.AsType[x509.HostnameError](err); ok {
		return " (the server's certificate does not name the URL's host: use a host name it names, or set the prometheus block's tls_config.server_name to one)"
	}
	if _, ok := errors.AsType[x509.CertificateInvalidError](err); ok {
		return " (the server's certificate is not valid, e.g. expired or not yet valid: renew it, or check this machine's clock)"
	}
	if strings.Contains(err.Error(), "server gave HTTP response to HTTPS client") {
		return " (the server speaks plain HTTP: use an http:// URL)"
	}
	return ""
}

// notJSON reports whether msg, a JSON decoder's error, says the body was
// not JSON at all (its first character).
func notJSON(msg string) bool {
	return strings.HasSuffix(msg, "looking for beginning of value")
}

// Unwrap returns Err.
func (e *QueryError) Unwrap() error { return e.Err }

// ReasonOf returns the Reason of err (a *QueryError somewhere in its chain),
// or classifies it as a client error would be. nil gives 0.
func ReasonOf(err error) Reason {
	if err == nil {
		return 0
	}
	if qe, ok := errors.AsType[*QueryError](err); ok {
		return qe.Reason
	}
	return classify(err)
}

// classify maps a client_golang / transport error to a Reason.
func classify(err error) Reason {
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		return ReasonTimeout
	case errors.Is(err, context.Canceled):
		return ReasonCanceled
	case errors.Is(err, ErrInvalidQuery):
		return ReasonInvalidQuery
	case errors.Is(err, ErrAnswerTooLarge):
		return ReasonBadResponse
	}
	if _, ok := errors.AsType[seriesTwiceError](err); ok {
		return ReasonBadResponse
	}
	if ae, ok := errors.AsType[*v1.Error](err); ok {
		switch ae.Type {
		case v1.ErrTimeout:
			return ReasonTimeout
		case v1.ErrCanceled:
			return ReasonCanceled
		case v1.ErrBadData, v1.ErrExec:
			return ReasonBadData
		case v1.ErrServer:
			// Prometheus answers a query timeout with 503 and a JSON body
			// {"errorType":"timeout"}; client_golang decodes bodies of 400
			// and 422 only, so look inside.
			if bodyErrorType(ae.Detail) == string(v1.ErrTimeout) {
				return ReasonTimeout
			}
			return ReasonUnavailable
		case v1.ErrClient:
			if notTheQuery(ae) {
				return ReasonUnavailable
			}
			return ReasonBadData
		default:
			return ReasonBadResponse
		}
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return ReasonTimeout
	}
	// Connection refused, DNS failure, reset: the server is not there.
	return ReasonUnavailable
}

// clientStatus is the HTTP status of client_golang's error for a 4xx
// other than 400 and 422 (its v1 API and the batched path word it
// "client error: <code>"), else 0.
func clientStatus(ae *v1.Error) int {
	var code int
	if ae.Type != v1.ErrClient {
		return 0
	}
	if _, err := fmt.Sscanf(ae.Msg, "client error: %d", &code); err != nil {
		return 0
	}
	return code
}

// notTheQuery reports whether ae is a 4xx about something else than the
// query: the rate of queries (429), the credentials (401, 403, 407), the
// URL (404). Retrying the batch's targets one by one would send one
// query per target into the same refusal, and back every target off for
// minutes after it ends. A 400 or 422 (Prometheus's own rejection of the
// query) and other 4xx (413 or 414: a proxy refusing a batch's size) are
// the query's.
func notTheQuery(ae *v1.Error) bool {
	switch clientStatus(ae) {
	case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusProxyAuthRequired, http.StatusTooManyRequests:
		return true
	}
	return false
}

// bodyError is the errorType and error of a Prometheus API error body
// ({"status":"error","errorType":...,"error":...}), the error cut at
// maxBodyError bytes; "" and "" for any other body (a proxy's HTML page).
func bodyError(body string) (typ, msg string) {
	var r struct {
		Status    string `json:"status"`
		ErrorType string `json:"errorType"`
		Error     string `json:"error"`
	}
	if json.Unmarshal([]byte(body), &r) != nil || r.Status != "error" {
		return "", ""
	}
	if len(r.Error) > maxBodyError {
		r.Error = strings.ToValidUTF8(r.Error[:maxBodyError], "") + "..."
	}
	return r.ErrorType, r.Error
}

// maxBodyError bounds the error of a 5xx body quoted in a QueryError.
const maxBodyError = 300

func bodyErrorType(body string) string {
	var r struct {
		ErrorType string `json:"errorType"`
	}
	if json.Unmarshal([]byte(body), &r) != nil {
		return ""
	}
	return r.ErrorType
}

// withCause is err with the cause of ctx's end before it, when ctx's
// deadline cut err short and had a cause of its own (serve's cycle: its
// period ended; net/http already says it, the body reads do not), so that a query cut by its caller's deadline says why,
// not "context deadline exceeded" alone under a timeout that did not pass.
// The client's own timeout (errClientTimeout) is not added: queryError
// says it, with the limit and the knob.
func withCause(ctx context.Context, err error) error {
	if err == nil || !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	if c := context.Cause(ctx); c != nil && c != context.DeadlineExceeded && c != errClientTimeout && !errors.Is(err, c) {
		return fmt.Errorf("%v: %w", c, err)
	}
	return err
}
