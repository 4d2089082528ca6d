package fleet

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/infscale/infscale/pkg/replica"
)

// TestStopEndsStreams: Stop ends an answer still streaming (its client's
// read fails at once, within Shutdown's second), as a pod's end does. The
// servers' Shutdown timed out on the stream's open connection and was not
// followed by Close: the handler waited for tokens the stopped engines
// would never produce, and the client until its own timeout.
func TestStopEndsStreams(t *testing.T) {
	r, err := replica.New(replica.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	f, err := Start(context.Background(), Config{Replicas: 1, Max: 1, Replica: r})
	if err != nil {
		t.Fatal(err)
	}
	body := `{"prompt":"hello","max_tokens":4000,"stream":true}`
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.URL()+"/v1/completions", strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("status %s", resp.Status)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() && !strings.HasPrefix(sc.Text(), "data:") { // the stream has begun
	}
	start := time.Now()
	go f.Stop()
	for sc.Scan() {
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the stream ended %v after Stop; want within Shutdown's second", took.Round(time.Millisecond))
	}
}
