package promql

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/prometheus/client_golang/api"
	v1 "github.com/prometheus/client_golang/api/prometheus/v1"
)

// statusChecked is an api.Client whose 2xx answers must say "status":
// "success" or "error", as every answer of the Prometheus HTTP API does
// (and Thanos's, Mimir's, VictoriaMetrics's). client_golang's v1 API reads
// the data of an answer without "status", or with another value
// ("pending"), as a success: a JSON answer of another API, or a stub's,
// was decided on. Such an answer is a *v1.Error of type bad_response
// (notAnAPIAnswer), whatever its data.
type statusChecked struct{ api.Client }

func (c statusChecked) Do(ctx context.Context, req *http.Request) (*http.Response, []byte, error) {
	resp, body, err := c.Client.Do(ctx, req)
	if err != nil || resp.StatusCode/100 != 2 {
		return resp, body, err
	}
	status, found, object := envelopeStatus(body)
	if object && status != "success" && status != "error" {
		return resp, body, notAnAPIAnswer(status, found)
	}
	if !object {
		if err := redirectedAway(req, resp); err != nil {
			return resp, body, err
		}
	}
	return resp, body, nil
}

// redirectedAway is the error of a 2xx answer that is not a JSON object
// (an HTML page) and came from another URL than the one asked, after a
// redirect: an auth proxy in front of Prometheus (oauth2-proxy) sends a
// request without its session to its login page. The URL is right; the
// credentials are missing, which "not JSON: give the base URL" sent the
// operator away from. nil when resp is the answer of req's own URL.
func redirectedAway(req *http.Request, resp *http.Response) *v1.Error {
	if resp.Request == nil || resp.Request.URL == nil || req.URL == nil ||
		(resp.Request.URL.Host == req.URL.Host && resp.Request.URL.Path == req.URL.Path) {
		return nil
	}
	to := *resp.Request.URL
	to.RawQuery, to.Fragment, to.User = "", "", nil // a login URL's state, not for the log
	return &v1.Error{Type: v1.ErrBadResponse,
		Msg: fmt.Sprintf("redirected to %s, whose answer is not a Prometheus API answer (an auth proxy's login page? give the prometheus block the credentials the proxy takes: authorization, basic_auth or oauth2; or use Prometheus's own URL)", to.String())}
}

// envelopeStatus is the value of body's top-level "status" key (found:
// there is one, with a string value), read with encoding/json's tokenizer
// no further than that key: Prometheus writes it first, so a range answer
// of hundreds of megabytes is not scanned twice. object is false when
// body is not a JSON object up to there (the API's decoder says why).
func envelopeStatus(body []byte) (status string, found, object bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", false, false
	}
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return "", false, false
		}
		if key == "status" {
			var v any
			if err := dec.Decode(&v); err != nil {
				return "", false, false
			}
			s, ok := v.(string)
			return s, ok, true
		}
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", false, false
		}
	}
	return "", false, true
}

// notAnAPIAnswer is the error of a 2xx JSON answer whose "status" is not
// "success" or "error" (found: it has a string status).
func notAnAPIAnswer(status string, found bool) *v1.Error {
	what := `no "status"`
	if found {
		what = fmt.Sprintf("status %.40q", status)
	}
	return &v1.Error{Type: v1.ErrBadResponse,
		Msg: what + ` where the Prometheus HTTP API answers "success" or "error": not its answer (another API's, or a stub's, at the URL?); its data is not read`}
}
