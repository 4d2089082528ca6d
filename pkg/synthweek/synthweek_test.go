package synthweek

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestWriteWeek(t *testing.T) {
	var buf bytes.Buffer
	tr, err := Write(&buf, Config{Scrape: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	s := buf.String()
	if !strings.HasSuffix(s, "# EOF\n") {
		t.Fatal("no # EOF")
	}
	// Rate averages over a weekday: 20 × (0.25 + 0.75/2) = 12.5 req/s; over
	// the week (5 weekdays + 2 × 0.4) / 7 × 12.5 ≈ 10.36 req/s, × 604800 s
	// ≈ 6.27 M, plus the spike (2 × 30 min × ~11.7 req/s ≈ 42 k).
	if tr.Requests < 6.1e6 || tr.Requests > 6.5e6 {
		t.Errorf("requests %d, want about 6.3 M", tr.Requests)
	}
	if tr.RestartPod == "" || tr.Pods < 10 {
		t.Errorf("restart pod %q, pods %d", tr.RestartPod, tr.Pods)
	}
	t.Logf("truth %+v, %d bytes", tr, buf.Len())
}
