package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// TestSigV4ConfigCommands: backtest, profile and tune --config read
// prometheus.sigv4 as serve does: each of their queries to the (fake)
// workspace carries a SigV4 Authorization of the config's access_key,
// today's date, its region and service aps; with no credentials anywhere
// each refuses the config (exit 2) naming sigv4, before any query.
func TestSigV4ConfigCommands(t *testing.T) {
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ROLE_ARN", "AWS_WEB_IDENTITY_TOKEN_FILE"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_CONFIG_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", filepath.Join(t.TempDir(), "none"))
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	var mu sync.Mutex
	var auths []string
	amp := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"matrix","result":[]}}`)
	}))
	defer amp.Close()
	write := func(sigv4 string) string {
		p := filepath.Join(t.TempDir(), "amp.yaml")
		y := "prometheus:\n  url: " + amp.URL + "/workspaces/ws-1\n  sigv4: " + sigv4 + "\n" +
			`targets: [{name: chat, server: vllm, selector: '{namespace="llm"}', metrics: [{type: queue, target: 4}], maxReplicaCount: 8}]` + "\n"
		if err := os.WriteFile(p, []byte(y), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	signed := write("{region: eu-west-1, access_key: AKIDEXAMPLE, secret_key: secret}")
	none := write("{region: eu-west-1}")
	end := time.Now().UTC().Truncate(time.Minute)
	rng := []string{"--target", "chat", "--start", fmt.Sprint(end.Add(-24 * time.Hour).Unix()), "--end", fmt.Sprint(end.Unix()), "--step", "5m"}
	want := "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/" + time.Now().UTC().Format("20060102") + "/eu-west-1/aps/aws4_request, SignedHeaders="
	for _, cmd := range []string{"backtest", "profile", "tune"} {
		mu.Lock()
		auths = nil
		mu.Unlock()
		var out, errb bytes.Buffer
		run(context.Background(), append([]string{cmd, "--config", signed}, rng...), nil, &out, &errb)
		mu.Lock()
		got := append([]string(nil), auths...)
		mu.Unlock()
		if len(got) == 0 {
			t.Errorf("%s: no query reached the workspace (%s)", cmd, errb.String())
		}
		for _, a := range got {
			if !strings.HasPrefix(a, want) {
				t.Errorf("%s: Authorization %q, want prefix %q", cmd, a, want)
				break
			}
		}
		mu.Lock()
		auths = nil
		mu.Unlock()
		errb.Reset()
		if code := run(context.Background(), append([]string{cmd, "--config", none}, rng...), nil, &out, &errb); code != exitInvalid || !strings.Contains(errb.String(), "sigv4: could not get SigV4 credentials") {
			t.Errorf("%s without credentials: exit %d, %q; want %d naming sigv4", cmd, code, errb.String(), exitInvalid)
		}
		mu.Lock()
		if len(auths) != 0 {
			t.Errorf("%s without credentials: %d queries sent", cmd, len(auths))
		}
		mu.Unlock()
	}
}
