package promql

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestAnswerOfAnotherMoment: Prometheus (and the servers of its API)
// answers an instant query with samples at the evaluation time asked. A
// caching proxy that answers with the samples of an hour before was read
// as now (serve decided on an hour-old load); an answer more than
// MaxAnswerSkew (5 min) from the time asked, before or after, is refused
// as bad_response, on the batched path and on v1's, saying how far and
// what it may be. 4 min 59 s away is read (a cache that rounds the time).
func TestAnswerOfAnotherMoment(t *testing.T) {
	at := time.Date(2026, 1, 5, 10, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		off  time.Duration
		want string // "" read; else the error's text
	}{
		{0, ""},
		{-4*time.Minute - 59*time.Second, ""},
		{4*time.Minute + 59*time.Second, ""},
		{-time.Hour, "answer evaluated at 2026-01-05T09:00:00Z, 1h0m0s before the time asked (2026-01-05T10:00:00Z): another moment's answer (a cache in front of Prometheus?); an answer more than 5m0s from it is not read"},
		{5*time.Minute + time.Second, "answer evaluated at 2026-01-05T10:05:01Z, 5m1s after the time asked (2026-01-05T10:00:00Z): another moment's answer (a server that evaluates at its own clock, ahead of this one, not at the time asked?)"},
	} {
		t.Run(tc.off.String(), func(t *testing.T) {
			ts := strconv.FormatInt(at.Add(tc.off).Unix(), 10)
			c, _ := fakeProm(t, reply(200, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{"infscale_target":"0"},"value":[`+ts+`,"7"]}]}}`))
			vals, _, berr := c.instantTagged(context.Background(), plainText("up"), 0, at)
			vec, _, verr := c.Instant(context.Background(), "up", at)
			for path, err := range map[string]error{"batch": berr, "v1": verr} {
				switch {
				case tc.want == "" && err != nil:
					t.Errorf("%s: %v, want the value read", path, err)
				case tc.want != "" && (ReasonOf(err) != ReasonBadResponse || !strings.Contains(fmt.Sprint(err), tc.want)):
					t.Errorf("%s: %v, want bad_response saying %q", path, err, tc.want)
				}
			}
			if tc.want == "" && (len(vals) != 1 || vals[0].value != 7 || len(vec) != 1 || vec[0].Value != 7) {
				t.Errorf("values %v and %v, want 7", vals, vec)
			}
		})
	}
}

// TestAnswerOfAnotherType: Prometheus answers a query with its
// expression's type. A scalar answer to a vector query (a proxy's) was
// read on v1's path as the vector's one sample; it is bad_response, as the
// batched path has always refused it. A scalar query's scalar answer reads.
func TestAnswerOfAnotherType(t *testing.T) {
	at := time.Unix(1767607200, 0)
	c, _ := fakeProm(t, reply(200, `{"status":"success","data":{"resultType":"scalar","result":[1767607200,"50"]}}`))
	if _, _, err := c.Instant(context.Background(), `sum(vllm:num_requests_running)`, at); ReasonOf(err) != ReasonBadResponse ||
		!strings.Contains(err.Error(), "result type scalar, want vector (the query's type)") {
		t.Errorf("scalar answer to a vector query: %v, want bad_response", err)
	}
	if _, _, err := c.instantTagged(context.Background(), plainText(`sum(vllm:num_requests_running)`), 0, at); ReasonOf(err) != ReasonBadResponse {
		t.Errorf("batched path: %v, want bad_response", err)
	}
	if v, _, err := c.Instant(context.Background(), `scalar(sum(vllm:num_requests_running))`, at); err != nil || len(v) != 1 || v[0].Value != 50 {
		t.Errorf("scalar query: %v, %v; want 50", v, err)
	}
}
