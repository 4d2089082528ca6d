package serve

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/config"
)

// awsEnvClean keeps the AWS SDK's default chain from reading this
// machine's credentials, profiles or instance metadata.
func awsEnvClean(t *testing.T) {
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
}

// sigv4Check verifies r's Authorization header as AWS does, by the steps
// of AWS's "Create a signed AWS API request" (canonical request, string
// to sign, HMAC-SHA256 key chain): it returns what is wrong, "" when the
// signature is the one secret makes for the scope date/region/aps.
func sigv4Check(r *http.Request, body []byte, akid, secret, region string, now time.Time) string {
	auth := r.Header.Get("Authorization")
	date := now.UTC().Format("20060102")
	scope := date + "/" + region + "/aps/aws4_request"
	prefix := "AWS4-HMAC-SHA256 Credential=" + akid + "/" + scope + ", SignedHeaders="
	if !strings.HasPrefix(auth, prefix) {
		return fmt.Sprintf("Authorization %q: want prefix %q", auth, prefix)
	}
	amzDate := r.Header.Get("X-Amz-Date")
	if at, err := time.Parse("20060102T150405Z", amzDate); err != nil || at.Sub(now).Abs() > 5*time.Minute {
		return fmt.Sprintf("X-Amz-Date %q: want yyyymmddThhmmssZ within 5 minutes of %s (AWS's allowed skew)", amzDate, now.UTC().Format(time.RFC3339))
	}
	signed, sig, ok := strings.Cut(strings.TrimPrefix(auth, prefix), ", Signature=")
	if !ok {
		return fmt.Sprintf("Authorization %q: no Signature", auth)
	}
	names := strings.Split(signed, ";")
	if !sort.StringsAreSorted(names) || !strings.Contains(";"+signed+";", ";host;") || !strings.Contains(";"+signed+";", ";x-amz-date;") {
		return fmt.Sprintf("SignedHeaders %q: want sorted, with host and x-amz-date", signed)
	}
	var ch strings.Builder
	for _, n := range names {
		v := strings.Join(r.Header.Values(n), ",")
		switch n {
		case "host":
			v = r.Host
		case "content-length":
			v = strconv.FormatInt(r.ContentLength, 10)
		}
		fmt.Fprintf(&ch, "%s:%s\n", n, strings.TrimSpace(v))
	}
	// The query string: keys sorted, each key and value percent-encoded
	// but for A-Za-z0-9-_.~ (a space is %20).
	q := r.URL.Query()
	keys := make([]string, 0, len(q))
	for k := range q {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	enc := func(s string) string { return strings.ReplaceAll(url.QueryEscape(s), "+", "%20") }
	var qs []string
	for _, k := range keys {
		vs := append([]string(nil), q[k]...)
		sort.Strings(vs)
		for _, v := range vs {
			qs = append(qs, enc(k)+"="+enc(v))
		}
	}
	sum := func(b []byte) string { h := sha256.Sum256(b); return hex.EncodeToString(h[:]) }
	canonical := strings.Join([]string{r.Method, r.URL.EscapedPath(), strings.Join(qs, "&"), ch.String(), signed, sum(body)}, "\n")
	toSign := "AWS4-HMAC-SHA256\n" + amzDate + "\n" + scope + "\n" + sum([]byte(canonical))
	mac := func(key []byte, s string) []byte {
		m := hmac.New(sha256.New, key)
		m.Write([]byte(s))
		return m.Sum(nil)
	}
	k := mac([]byte("AWS4"+secret), date)
	for _, s := range []string{region, "aps", "aws4_request"} {
		k = mac(k, s)
	}
	if want := hex.EncodeToString(mac(k, toSign)); sig != want {
		return fmt.Sprintf("Signature %s, want %s (canonical request:\n%s)", sig, want, canonical)
	}
	return ""
}

// TestSigV4SignsQueries: with prometheus.sigv4's static access_key and
// secret_key, every query serve sends carries an Authorization header
// AWS accepts for Amazon Managed Prometheus (service aps, the config's
// region): a fake workspace checks each as AWS documents it and answers
// 403 otherwise, as AMP does. Without sigv4 the queries are unsigned.
func TestSigV4SignsQueries(t *testing.T) {
	awsEnvClean(t)
	var mu sync.Mutex
	var got []string // per query: "" signed right, else what is wrong
	amp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		why := sigv4Check(r, body, "AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "eu-west-1", time.Now())
		mu.Lock()
		got = append(got, why)
		mu.Unlock()
		if why != "" {
			http.Error(w, why, http.StatusForbidden)
			return
		}
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
	}))
	defer amp.Close()
	const tg = `targets: [{name: a, server: vllm, selector: '{namespace="llm"}', metrics: [{type: queue, target: 4}], maxReplicaCount: 8}]` + "\n"
	read := func(prom string) []string {
		t.Helper()
		cfg, err := config.Parse([]byte(fmt.Sprintf("prometheus:\n  url: %s/workspaces/ws-1\n%s%s", amp.URL, prom, tg)), "amp.yaml")
		if err != nil {
			t.Fatal(err)
		}
		src, err := NewPrometheusSource(cfg.Prometheus)
		if err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		got = nil
		mu.Unlock()
		src.Read(t.Context(), []*config.Target{&cfg.Targets[0]}, time.Now())
		src.diag.wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), got...)
	}
	signed := read("  sigv4: {region: eu-west-1, access_key: AKIDEXAMPLE, secret_key: wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY}\n")
	if len(signed) == 0 {
		t.Fatal("no query reached the workspace")
	}
	t.Logf("%d queries, each checked", len(signed))
	for i, why := range signed {
		if why != "" {
			t.Errorf("query %d: %s", i, why)
		}
	}
	// The check is not vacuous: a wrong secret_key signs, wrongly.
	wrong := read("  sigv4: {region: eu-west-1, access_key: AKIDEXAMPLE, secret_key: not-the-secret}\n")
	if len(wrong) == 0 || !strings.HasPrefix(wrong[0], "Signature ") {
		t.Errorf("wrong secret_key: %q, want a signature mismatch", wrong)
	}
	unsigned := read("")
	if len(unsigned) == 0 || !strings.HasPrefix(unsigned[0], "Authorization \"\"") {
		t.Errorf("without sigv4: %q, want the queries unsigned", unsigned)
	}
}

// TestSigV4NoCredentials: sigv4 with no access_key and no credentials in
// AWS's default chain (no IRSA token, environment or profile) fails when
// the source is built, naming sigv4, not at each query with a 403.
func TestSigV4NoCredentials(t *testing.T) {
	awsEnvClean(t)
	cfg, err := config.Parse([]byte("prometheus:\n  url: http://127.0.0.1:1\n  sigv4: {region: eu-west-1}\n"+
		`targets: [{name: a, server: vllm, selector: '{namespace="llm"}', metrics: [{type: queue, target: 4}], maxReplicaCount: 8}]`+"\n"), "amp.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, err = NewPrometheusSource(cfg.Prometheus)
	if err == nil || !strings.Contains(err.Error(), "sigv4: could not get SigV4 credentials") {
		t.Errorf("got %v, want sigv4: could not get SigV4 credentials", err)
	}
}

// TestSigV4DefaultChain: without access_key, sigv4 takes the credentials
// of AWS's default chain (here the environment's; in EKS IRSA's web
// identity token, which the chain reads the same way) and the region
// from AWS_REGION when sigv4 names none.
func TestSigV4DefaultChain(t *testing.T) {
	awsEnvClean(t)
	t.Setenv("AWS_ACCESS_KEY_ID", "AKIDENV")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "envsecret")
	t.Setenv("AWS_REGION", "us-east-2")
	var why string
	amp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		why = sigv4Check(r, body, "AKIDENV", "envsecret", "us-east-2", time.Now())
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
	}))
	defer amp.Close()
	cfg, err := config.Parse([]byte("prometheus:\n  url: "+amp.URL+"\n  sigv4: {}\n"+
		`targets: [{name: a, server: vllm, selector: '{namespace="llm"}', metrics: [{type: queue, target: 4}], maxReplicaCount: 8}]`+"\n"), "amp.yaml")
	if err != nil {
		t.Fatal(err)
	}
	rt, err := cfg.Prometheus.RoundTripper()
	if err != nil {
		t.Fatal(err)
	}
	resp, err := (&http.Client{Transport: rt}).PostForm(amp.URL+"/api/v1/query", url.Values{"query": {"up"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if why != "" {
		t.Error(why)
	}
}
