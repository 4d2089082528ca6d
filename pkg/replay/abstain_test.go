package replay

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/infscale/infscale/pkg/trace"
)

// TestSilenceScalesDown: in a silent stretch no request gets a first
// token, so the TTFT histogram has no observation in its window; serve
// then sets Observation.NoneFinished and, with nothing running or
// waiting, the ttft metric abstains (recommend.TTFTAbstains) instead of
// blocking the scale-down as partial data. The replay observes the same.
// 600 requests in the first 60 s (10 req/s of 320/256 tokens: queue:4
// asks for more than one replica), then one request at 1,200 s. With
// queue:4,ttft:2 and a 60 s scale-down window: by 600 s the queue and the
// TTFT window (60 s) have been empty for minutes, so the desired count is
// min (1); had the unknown TTFT blocked the scale-down it would still be
// the burst's count.
func TestSilenceScalesDown(t *testing.T) {
	var b strings.Builder
	b.WriteString(trace.GenericHeader + "\n")
	for i := range 600 {
		fmt.Fprintf(&b, "%g,320,256\n", float64(i)/10)
	}
	b.WriteString("1200,320,256\n")
	path := filepath.Join(t.TempDir(), "burst.csv")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := trace.ParseContext(context.Background(), "csv:"+path, trace.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pol, err := ParsePolicy("queue:4,ttft:2,downwindow=60")
	if err != nil {
		t.Fatal(err)
	}
	res, err := Run(context.Background(), src, pol, Config{Model: referenceModel(t), Timeline: true})
	if err != nil {
		t.Fatal(err)
	}
	peak := 0
	for _, s := range res.Timeline {
		peak = max(peak, s.Desired)
		if s.T == 600 && s.Desired != 1 {
			t.Errorf("desired %d at 600 s, want 1 (the silence scaled down)", s.Desired)
		}
	}
	if peak < 2 {
		t.Errorf("peak %d: the burst should have asked for more than one replica", peak)
	}
}
