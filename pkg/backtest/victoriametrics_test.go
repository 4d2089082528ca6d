package backtest

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/infscale/infscale/internal/promtest"
	"github.com/infscale/infscale/pkg/modelserver"
	"github.com/infscale/infscale/pkg/synthweek/synthweektest"
)

// TestCalibrateRefusesVictoriaMetrics: MetricsQL's rate() also counts the
// last sample before its window, so a calibration window of 2 scrapes
// reads 3 (its counters span one scrape more than its gauges). On
// synth-week's history that fitted a step overhead of 2.45 ms where
// Prometheus 2.53 and 3.x fit the truth's 2.00: FetchWindows refuses the
// server before it reads a window.
func TestCalibrateRefusesVictoriaMetrics(t *testing.T) {
	var om bytes.Buffer
	truth, err := synthweektest.WriteReplica(&om, truthReplica(synthweektest.Replica{Windows: 20}))
	if err != nil {
		t.Fatal(err)
	}
	url := promtest.StartVictoriaMetrics(t, om.Bytes())
	api, ms, g := llmHistory(t, url, truth.Start, truth.End)
	_, _, err = FetchWindows(context.Background(), api, Target{Server: modelserver.VLLM, Selector: ms}, g, nil)
	if !errors.Is(err, ErrMetricsQL) {
		t.Fatalf("FetchWindows on VictoriaMetrics: err %v, want ErrMetricsQL", err)
	}
	for _, want := range []string{"VictoriaMetrics", "sample before", "Prometheus"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	t.Log(err)
}
